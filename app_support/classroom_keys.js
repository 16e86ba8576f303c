(() => {
  if (window.__prefillDecodeClassroomKeys) return;
  window.__prefillDecodeClassroomKeys = true;
  const keys = __CLASSROOM_KEYS__;  // a key -> the keys of the buttons it presses, the first on the page
  const blankKeys = __BLANK_KEYS__;  // keys that blank the screen and bring it back (a clicker's "blank" sends B or .)
  // Where a key belongs to what has the focus: text, lists, sliders, menus. A switch, a checkbox, a
  // button or a radio group keeps the classroom's meaning of the keys: the classroom switch just clicked
  // keeps the focus, and after a click on a figure in the sidebar's list (a radio group) ← still steps
  // back a pass instead of choosing the figure above (the keys must mean one thing wherever one clicked).
  const editable = 'textarea, select, [contenteditable=""], [contenteditable="true"], '
    + 'input:not([type="checkbox"]):not([type="radio"]):not([type="button"]):not([type="submit"]), '
    + '[role="slider"], [role="combobox"], [role="listbox"], [role="spinbutton"], [role="textbox"], '
    + '[role="menu"], [role="tablist"]';
  // Space and Enter press what the focus is on only where the visitor went there with Tab (a keyboard
  // user's choice); a switch or button that merely kept the focus after a mouse click is not toggled
  // (Space on the classroom switch turned classroom mode off: a clicker's "next" sends Space or Enter).
  const activates = 'button, input, summary, a[href], [role="button"], [role="switch"], [role="checkbox"], '
    + '[role="radio"], [role="tab"]';
  const activationKeys = [' ', 'Enter'];
  let tabbed = false;  // the focus was last moved with Tab, not by a click
  let swallowed = null;  // the key whose keydown stepped: its keyup must not click the focused widget either
  const classroomOn = () => !!document.querySelector('.st-key-class_next, .st-key-pres_next');
  // Esc belongs to a figure shown full screen or a dialog (Streamlit closes them) before the presenter view
  const escapeTaken = () => !!document.querySelector('button[aria-label^="Close fullscreen"], [role="dialog"]');

  const blank = () => document.getElementById('pd-blank');
  const toggleBlank = () => {
    const shown = blank();
    if (shown) { shown.remove(); return; }
    const cover = document.createElement('div');
    cover.id = 'pd-blank';  // fixed words, no user text
    cover.setAttribute('aria-label', 'blank screen');
    cover.style.cssText = 'position:fixed;inset:0;background:#000;z-index:2147483647;cursor:none';
    document.body.appendChild(cover);
  };
  const take = (event) => {
    event.preventDefault();  // Page Down / Space / Home / End step the lesson instead of scrolling it
    event.stopPropagation();  // and a focused radio group or switch does not also act on it
    swallowed = event.key;
  };

  document.addEventListener('mousedown', () => { tabbed = false; }, true);
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Tab') tabbed = true;
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const target = event.target;
    if (target instanceof Element && (target.isContentEditable || target.closest(editable))) return;
    if (blank()) { take(event); toggleBlank(); return; }  // any key brings the screen back, and does only that
    if (blankKeys.includes(event.key) && classroomOn()) { take(event); toggleBlank(); return; }
    const names = keys[event.key];
    if (!names) return;
    if (activationKeys.includes(event.key) && tabbed && target instanceof Element && target.closest(activates)) return;
    if (event.key === 'Escape' && escapeTaken()) return;
    // the first of its buttons on the page that can be pressed (a disabled one passes the key on)
    const button = names.map((name) => document.querySelector('.st-key-' + name + ' button'))
      .find((b) => b && !b.disabled);
    if (!button) {  // nothing to press (the run's end): the key still must not toggle what holds the focus
      if (activationKeys.includes(event.key) && classroomOn()) take(event);
      return;
    }
    take(event);
    button.click();
  }, true);  // capture: before the page's own handlers (a radio's runs first and takes the arrows)
  document.addEventListener('keyup', (event) => {
    if (event.key !== swallowed) return;
    swallowed = null;
    event.preventDefault();  // Space clicks a focused button or switch on its keyup
    event.stopPropagation();
  }, true);
})();
