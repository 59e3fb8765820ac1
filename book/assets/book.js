// Renders the math that pymdownx.arithmatex marked up, with the KaTeX copied into the site.
// Runs on every page load (Material's document$ also fires after instant navigation).
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: true, // a malformed formula shows up as a console error in the tests
    });
  });
});
