(() => {
  // Once per tab: the lesson below its first screen is drawn when the reader comes to it. Every quarter
  // second, while the page is idle (no run under way), the "read on" button is pressed when it is within
  // one window's height below the window, or when the address names a section that is not drawn yet (a
  // link from the contents or the text); that section is then brought up once it is there.
  if (window.__prefillDecodeReadOn) return;
  window.__prefillDecodeReadOn = true;
  let wanted = null;  // the section a link asked for, until it is drawn and brought into view
  const idle = () => {
    const s = document.querySelector('[data-test-script-state]');
    return !!s && s.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
  };
  const asked = () => {
    let id = '';
    try { id = decodeURIComponent(window.location.hash.slice(1)); } catch (e) { return null; }
    return id && !document.getElementById(id) ? id : null;
  };
  setInterval(() => {
    if (!idle()) return;
    if (wanted) {
      const target = document.getElementById(wanted);
      if (target) { target.scrollIntoView({block: 'start'}); wanted = null; }
    }
    const button = document.querySelector('.st-key-read_on button');
    if (!button || button.disabled) return;
    const id = asked();
    if (id || button.getBoundingClientRect().top < 2 * window.innerHeight) {
      wanted = id;
      button.click();
    }
  }, 250);
})();
