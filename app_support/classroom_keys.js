(() => {
  if (window.__prefillDecodeClassroomKeys) return;
  window.__prefillDecodeClassroomKeys = true;
  const keys = __CLASSROOM_KEYS__;  // a key -> the keys of the buttons it presses, the first on the page
  // Where a key belongs to what has the focus: text, lists, sliders, radio groups (arrows move a radio).
  // A switch, a checkbox or a button does not use the arrows: the classroom switch just clicked keeps the
  // focus, and the keys must work at once.
  const editable = 'textarea, select, [contenteditable=""], [contenteditable="true"], '
    + 'input:not([type="checkbox"]):not([type="button"]):not([type="submit"]), '
    + '[role="slider"], [role="combobox"], [role="listbox"], [role="spinbutton"], [role="textbox"], '
    + '[role="radiogroup"], [role="menu"], [role="tablist"]';
  document.addEventListener('keydown', (event) => {
    const names = keys[event.key];
    if (!names || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const target = event.target;
    if (target instanceof Element && (target.isContentEditable || target.closest(editable))) return;
    const button = names.map((name) => document.querySelector('.st-key-' + name + ' button')).find((b) => b);
    if (!button || button.disabled) return;
    event.preventDefault();  // Page Down / Home / End step the lesson instead of scrolling it
    button.click();
  });
})();
