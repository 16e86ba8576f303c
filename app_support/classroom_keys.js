(() => {
  if (window.__prefillDecodeClassroomKeys) return;
  window.__prefillDecodeClassroomKeys = true;
  const keys = __CLASSROOM_KEYS__;  // a key -> the keys of the buttons it presses, the first on the page
  // Where a key belongs to what has the focus: text, lists, sliders, menus. A switch, a checkbox, a
  // button or a radio group keeps the classroom's meaning of the keys: the classroom switch just clicked
  // keeps the focus, and after a click on a figure in the sidebar's list (a radio group) ← still steps
  // back a pass instead of choosing the figure above (the keys must mean one thing wherever one clicked).
  const editable = 'textarea, select, [contenteditable=""], [contenteditable="true"], '
    + 'input:not([type="checkbox"]):not([type="radio"]):not([type="button"]):not([type="submit"]), '
    + '[role="slider"], [role="combobox"], [role="listbox"], [role="spinbutton"], [role="textbox"], '
    + '[role="menu"], [role="tablist"]';
  document.addEventListener('keydown', (event) => {
    const names = keys[event.key];
    if (!names || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const target = event.target;
    if (target instanceof Element && (target.isContentEditable || target.closest(editable))) return;
    // the first of its buttons on the page that can be pressed (a disabled one passes the key on)
    const button = names.map((name) => document.querySelector('.st-key-' + name + ' button'))
      .find((b) => b && !b.disabled);
    if (!button) return;
    event.preventDefault();  // Page Down / Home / End step the lesson instead of scrolling it
    event.stopPropagation();  // and a focused radio group does not also move its choice
    button.click();
  }, true);  // capture: before the page's own handlers (a radio's runs first and takes the arrows)
})();
