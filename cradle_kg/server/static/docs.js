// Starts the vendored Swagger UI on this server's own OpenAPI document (no CDN, no validator).
"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  persistAuthorization: false,
});
