// Renders the service's OpenAPI document with the vendored Swagger UI
// (platform/apidoc). It is a file of its own because the page's
// Content-Security-Policy allows no inline script.
"use strict";
(function () {
  var el = document.getElementById("reference");
  window.ui = SwaggerUIBundle({
    url: el.dataset.url,
    domNode: el,
    deepLinking: true,
    // No badge fetched from validator.swagger.io, and no ?url= or
    // ?configUrl= that would point the page at another document.
    validatorUrl: null,
    queryConfigEnabled: false,
  });
})();
