(() => {
  // Once, on the page run that draws an opened link's values: the address becomes the path, Streamlit's
  // embedding parameters as they were, the query the page keeps (its language, where it is not the
  // default: __KEPT__), and the address's #section. Streamlit would have written path + query, dropping
  // the section. Nothing else in the address is read or written.
  const query = new URLSearchParams();
  for (const [key, value] of new URLSearchParams(window.location.search)) {
    if (key.toLowerCase() === 'embed' || key.toLowerCase() === 'embed_options') query.append(key, value);
  }
  for (const [key, value] of new URLSearchParams(__KEPT__)) query.append(key, value);
  const search = query.toString();
  const url = window.location.pathname + (search ? '?' + search : '') + window.location.hash;
  if (url !== window.location.pathname + window.location.search + window.location.hash) {
    window.history.replaceState(window.history.state, '', url);
  }
})();
