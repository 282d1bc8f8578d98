// minikafka console: refreshes the live part of a topic page (partition table and segment drawings) every
// second with the server-rendered fragment, so the drawing follows the cleaner. No framework, no build step.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const url = "/topic/live?name=" + encodeURIComponent(live.dataset.topic);
  let busy = false;
  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (response.ok) live.innerHTML = await response.text();
    } catch (error) {
      // the broker restarting: keep the last drawing and try again on the next tick
    } finally {
      busy = false;
    }
  }
  setInterval(refresh, 1000);
})();
