(() => {
  // Streamlit's own English in a Chinese page, in the page's language: what a screen reader says for its
  // buttons ("Help for 模型", "Copy to clipboard", "Increment") and the file uploader's "Upload". Sent again
  // on every run (the language may have changed; an English page sends none: Streamlit's words come back).
  window.__pdStreamlitWords = __STREAMLIT_WORDS__;
  if (window.__prefillDecodeStreamlitWords) return;
  window.__prefillDecodeStreamlitWords = true;
  // element -> {attribute: [Streamlit's English, what this script wrote]}: a page switched back to English
  // gets Streamlit's words again (React writes an attribute only when its own value changes)
  const written = new WeakMap();
  const writtenText = new WeakMap();  // a text node -> [Streamlit's English, what this script wrote]
  const worded = (english, words) => {
    if (english in words.exact) return words.exact[english];
    for (const [prefix, template] of Object.entries(words.prefixes)) {
      if (english.startsWith(prefix)) return template.replace('{label}', english.slice(prefix.length));
    }
    return english;
  };
  const translate = () => {
    const words = window.__pdStreamlitWords;
    for (const name of ['aria-label', 'title']) {
      document.querySelectorAll('[' + name + ']').forEach((el) => {
        const drawn = el.getAttribute(name);
        const mine = (written.get(el) || {})[name];
        const english = mine && mine[1] === drawn ? mine[0] : drawn;  // else React drew a new English value
        const shown = worded(english, words);
        if (shown === drawn) return;
        written.set(el, Object.assign(written.get(el) || {}, {[name]: [english, shown]}));
        el.setAttribute(name, shown);  // an attribute, never markup: a label's own text stays text
      });
    }
    // the uploader's button: its text ("Upload"; the icon's ligature "upload" is no word of the map)
    document.querySelectorAll('[data-testid="stFileUploader"] button').forEach((button) => {
      const walker = document.createTreeWalker(button, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const drawn = node.nodeValue.trim();
        const mine = writtenText.get(node);
        const english = mine && mine[1] === drawn ? mine[0] : drawn;
        const shown = worded(english, {exact: words.exact, prefixes: {}});
        if (shown === drawn) continue;
        writtenText.set(node, [english, shown]);
        node.nodeValue = shown;
      }
    });
  };
  let queued = false;
  const soon = () => { if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; translate(); }); } };
  new MutationObserver(soon).observe(document.documentElement, {subtree: true, childList: true, characterData: true,
                                                              attributes: true, attributeFilter: ['aria-label', 'title']});
  soon();
})();
