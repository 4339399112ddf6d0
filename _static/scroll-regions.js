// Code and outputs that scroll sideways, reached with the keyboard.
//
// pydata-sphinx-theme gives a tab stop to each code block, output and table that is
// too wide for the column (tabindex 0, so that the arrow keys scroll it), but only
// when the page loads, when the window is resized and when the article's elements
// change. A code block inside a solution or a deep dive is measured while its box is
// collapsed, where it may still fit; once the box is opened it scrolls, and a reader
// without a mouse could not reach what is cut off. Each of these elements is watched
// here and measured again whenever its size changes, opening its box included.
document.addEventListener("DOMContentLoaded", () => {
  const main = document.getElementById("main-content");
  if (!main || !("ResizeObserver" in window)) {
    return;
  }
  const scrollable = [
    "pre",
    ".nboutput > .output_area",
    ".cell_output > .output",
    ".jp-RenderedHTMLCommon",
    ".pst-scrollable-table-container",
    "article table",
  ].join(", ");
  const measure = (element) => {
    const wide = element.scrollWidth > element.clientWidth;
    const tall = element.scrollHeight > element.clientHeight;
    element.tabIndex = wide || tall ? 0 : -1;
  };
  const watcher = new ResizeObserver((entries) => {
    for (const entry of entries) {
      measure(entry.target);
    }
  });
  main.querySelectorAll(scrollable).forEach((element) => watcher.observe(element));
});
