// The menu and page-contents buttons of every page.
//
// The book theme draws these two buttons in the article header and hides the
// site-header copies that pydata-sphinx-theme also draws. The pinned themes
// (pydata-sphinx-theme 0.17.1, sphinx-book-theme 1.3.0) attach their click handlers to
// the first `.primary-toggle` and `.secondary-toggle` of the page: the hidden copies.
// Clicks on the visible buttons therefore only showed a tooltip: below 992 px the
// chapter drawer and the page contents never opened, and above it the menu button no
// longer folded the sidebar away.
//
// A click on a visible button is handed to its hidden copy, where the themes' own
// handlers do the rest: the drawer (a modal dialog) below 992 px, folding the
// sidebar away and back above it. Where the site-header copy is itself on screen
// (a theme version that no longer hides it), nothing is forwarded.
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary", "secondary"]) {
    const hidden = document.querySelector(`#pst-header .${kind}-toggle`);
    const shown = document.querySelector(`.bd-header-article .${kind}-toggle`);
    if (!hidden || !shown || hidden === shown) {
      continue;
    }
    shown.addEventListener("click", (event) => {
      if (hidden.getClientRects().length > 0) {
        return;
      }
      event.preventDefault();
      hidden.click();
    });
  }
});
