(() => {
  // Once, on a session's first run whose query Streamlit read as empty: an address whose query is past
  // Streamlit's own bounds (__MAX_FIELDS__ values, __MAX_CHARS__ characters) was dropped whole before
  // the page could read it. The page is opened again with only what it can say about that: the
  // address's language (when it names one the page has) and how many values it had. Nothing of the
  // query's values is read, shown or kept.
  const search = window.location.search.slice(1);
  if (!search) return;
  const parts = search.split('&');
  if (parts.length <= __MAX_FIELDS__ && search.length <= __MAX_CHARS__) return;
  const named = parts.find((part) => part.startsWith('lang='));
  const lang = named ? named.slice(5) : '';
  const query = new URLSearchParams();
  if (__LANGUAGES__.includes(lang)) query.append('lang', lang);
  query.append('__PARAM__', String(parts.length));
  window.location.replace(window.location.pathname + '?' + query.toString() + window.location.hash);
})();
