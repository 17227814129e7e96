// toolish-rag inspect: the only script a page runs (the CSP allows no other, and none inline).
// It follows a running evaluation's progress; every page works without it.
'use strict';
(function () {
  const bar = document.getElementById('eval-progress');
  const state = document.getElementById('eval-state');
  if (!bar || !state) return;
  async function poll() {
    let status;
    try {
      const response = await fetch(bar.dataset.status, { credentials: 'same-origin' });
      if (!response.ok) return;
      status = await response.json();
    } catch (e) {
      return;
    }
    bar.max = Math.max(status.total, 1);
    bar.value = status.done;
    state.textContent = status.state === 'querying' ? 'querying ' + status.done + '/' + status.total : status.state;
    if (status.state === 'indexing' || status.state === 'querying') {
      setTimeout(poll, 500);
    } else if (status.state === 'done' || status.state === 'failed') {
      if (bar.dataset.reloaded !== 'yes' && document.getElementById('run-eval') === null) {
        bar.dataset.reloaded = 'yes';
        window.location.reload();
      }
    }
  }
  poll();
})();
