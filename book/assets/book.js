// Renders the math that pymdownx.arithmatex marked up, with the KaTeX copied into the site.
// Runs on every page load (Material's document$ also fires after instant navigation).
var MATH_DELIMITERS = [
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];

document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, {
      delimiters: MATH_DELIMITERS,
      throwOnError: true, // a malformed formula shows up as a console error in the tests
    });
  });
});

// The search index keeps each section's text with its math delimiters, so the result previews
// would show \(\alpha\) as typed: typeset each preview as the search adds it. A preview can be
// cut inside a formula; such a formula is left as text rather than reported as an error.
(function () {
  function typeset(root) {
    root.querySelectorAll(".md-search-result__article:not([data-math])").forEach(function (el) {
      el.setAttribute("data-math", "");
      renderMathInElement(el, {
        delimiters: MATH_DELIMITERS,
        throwOnError: false,
        errorCallback: function () {},
      });
    });
  }
  var results = document.querySelector(".md-search-result");
  if (results) {
    new MutationObserver(function () {
      typeset(results);
    }).observe(results, { childList: true, subtree: true });
  }
})();
