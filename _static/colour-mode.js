// The book theme leaves the colour mode empty when the reader has not chosen one, and
// the page then logs an error before falling back to "auto". Start from "auto".
if (!document.documentElement.dataset.mode) {
  document.documentElement.dataset.mode = "auto";
}
