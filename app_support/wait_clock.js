(() => {
  // The words of the page's language, sent again on every run (the language may have changed)
  window.__pdWaitWords = __WAIT_WORDS__;
  if (window.__prefillDecodeWaitClock) return;
  window.__prefillDecodeWaitClock = true;
  // Every wait shows the seconds it has lasted: a spinner or a progress bar while the page's script runs
  // (the bar says the phase: which mode, which point; between two of its steps, a compiled mode's compile
  // took a minute with nothing moving), and the slide kit's zip while the browser waits for it (its button
  // disabled, with Streamlit's spinner icon). The count starts when the wait appears and is gone once the
  // wait is (a bar left on the page after its run is no wait: it is counted only while the script runs).
  const positions = __NOT_WAITS__;  // progress bars that say a position, not a wait (the classroom's step)
  const kits = __KIT_BUTTONS__;  // the slide kit's download buttons: their zip is drawn when clicked
  const SHOW_AFTER_S = 1;  // a wait shorter than this shows nothing (no flicker on a quick run)
  let running = false;  // the page's script is running (a spinner or a bar then is a wait under way)
  const scriptRunning = () => {
    const app = document.querySelector('[data-test-script-state]');
    return !!app && app.getAttribute('data-test-script-state') === 'running';
  };
  const say = (box, words, startedAt) => {
    const seconds = Math.floor((performance.now() - startedAt) / 1000);
    let line = box.querySelector(':scope > .pd-wait-elapsed');
    if (seconds < SHOW_AFTER_S) { if (line) line.remove(); return; }
    if (!line) {
      line = document.createElement('div');
      line.className = 'pd-wait-elapsed';
      line.style.cssText = 'font-size:0.9rem;opacity:0.75;margin-top:0.2rem';
      box.appendChild(line);
    }
    const text = words.replace('{s}', String(seconds));
    if (line.textContent !== text) line.textContent = text;  // textContent: fixed words and a number only
  };
  const started = new WeakMap();  // a wait's box -> when it was first seen (performance.now())
  const clock = (box, words) => {
    if (!started.has(box)) started.set(box, performance.now());
    say(box, words, started.get(box));
  };
  const stop = (box) => {
    started.delete(box);
    const line = box.querySelector(':scope > .pd-wait-elapsed');
    if (line) line.remove();
  };
  const tick = () => {
    const words = window.__pdWaitWords;
    running = scriptRunning();
    document.querySelectorAll('[data-testid="stSpinner"], [data-testid="stProgress"]').forEach((box) => {
      const waiting = running && !box.closest('[data-stale="true"]') && !positions.some((k) => box.closest('.st-key-' + k));
      if (waiting) clock(box, words.elapsed); else stop(box);
    });
    kits.forEach((key) => {
      const box = document.querySelector('.st-key-' + key);
      if (!box) return;
      const button = box.querySelector('button');
      if (button && button.disabled) clock(box, words.kit); else stop(box);
    });
  };
  setInterval(tick, 250);
})();
