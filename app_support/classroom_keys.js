(() => {
  if (window.__prefillDecodeClassroomKeys) return;
  window.__prefillDecodeClassroomKeys = true;
  const keys = __CLASSROOM_KEYS__;
  const editable = 'input, textarea, select, [contenteditable=""], [contenteditable="true"], '
    + '[role="slider"], [role="combobox"], [role="listbox"], [role="spinbutton"], [role="textbox"]';
  document.addEventListener('keydown', (event) => {
    const key = keys[event.key];
    if (!key || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const target = event.target;
    if (target instanceof Element && (target.isContentEditable || target.closest(editable))) return;
    const button = document.querySelector('.st-key-' + key + ' button');
    if (!button || button.disabled) return;
    event.preventDefault();  // Page Down / Home / End step the lesson instead of scrolling it
    button.click();
  });
})();
