// Placeholder of the web app (the `webapp` branch replaces this file): it only shows that
// the module loaded, so the server's tests can serve a real ES module.
const main = document.getElementById("app");
if (main) {
  main.dataset.loaded = "true";
}
