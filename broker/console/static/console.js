// minikafka console: refreshes the live part of a page (a topic's partition table and segment drawings, the
// cluster page's brokers and leaders) every second with the server-rendered fragment its data-src names, so the
// drawing follows the cleaner and the leaders follow the faults. No framework, no build step.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const url = live.dataset.src;
  if (!url) return;
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
