/*! refTrack: affiliate click tracking for the Affiliate Programme API. No dependencies. */
// Load with:
//   <script src="https://API/tracker.js" data-campaign="cmp_..." async></script>
// data-api     API base URL (default: where this file was loaded from)
// data-campaign the campaign id (clicks are recorded only when set)
// data-param   query parameter holding the affiliate code (default "ref")
// data-global  name of the global object (default "refTrack")
// Nothing is written to cookies or storage before consent() is called.
(() => {
  'use strict';
  const w = window;
  const d = document;
  const TIMEOUT_MS = 8000;
  try {
    const script = d.currentScript || d.querySelector('script[src*="tracker.js"][data-campaign]');
    const data = (script && script.dataset) || {};
    const name = data.global || 'refTrack';
    if (w[name] && typeof w[name].identify === 'function') return; // loaded twice
    let base = data.api;
    if (!base) {
      try {
        base = new URL(script.src, location.href).origin;
      } catch (_) {
        base = location.origin;
      }
    }
    const api = String(base).replace(/\/+$/, '');
    const campaign = data.campaign || '';
    const param = data.param || 'ref';
    const storageKey = name + '.session';

    let consented = false;
    let session = null; // {sessionId, expiresAt, campaign, ref} of this page's click
    let pending = Promise.resolve();

    const load = () => {
      try {
        const v = JSON.parse(w.localStorage.getItem(storageKey) || 'null');
        if (v && typeof v.sessionId === 'string' && Date.parse(v.expiresAt) > Date.now()) return v;
      } catch (_) {}
      return null;
    };
    const save = () => {
      try {
        if (consented && session) w.localStorage.setItem(storageKey, JSON.stringify(session));
      } catch (_) {}
    };

    // POST JSON; the envelope's data, or null on any failure. Never rejects.
    const post = async (path, body) => {
      let timer = 0;
      try {
        if (typeof fetch !== 'function') return null;
        const ctrl = typeof AbortController === 'function' ? new AbortController() : null;
        if (ctrl) timer = setTimeout(() => ctrl.abort(), TIMEOUT_MS);
        const res = await fetch(api + path, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
          keepalive: true,
          credentials: 'omit',
          mode: 'cors',
          signal: ctrl ? ctrl.signal : undefined,
        });
        if (!res.ok) return null;
        const json = await res.json();
        return json && json.success ? json.data : null;
      } catch (_) {
        return null;
      } finally {
        clearTimeout(timer);
      }
    };

    // Lowercase hex SHA-256, or null where the page cannot hash (not a secure context).
    const sha256 = async (text) => {
      try {
        const subtle = w.crypto && w.crypto.subtle;
        if (!subtle || typeof TextEncoder !== 'function') return null;
        const buf = await subtle.digest('SHA-256', new TextEncoder().encode(text));
        return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
      } catch (_) {
        return null;
      }
    };

    const sessionId = () => {
      const s = session || load();
      return s ? s.sessionId : null;
    };

    const tracker = {
      version: 1,
      // Grants consent: the session id is kept in localStorage from now on.
      consent() {
        try {
          consented = true;
          save();
        } catch (_) {}
        return true;
      },
      // Withdraws consent and removes what was stored.
      forget() {
        try {
          consented = false;
          session = null;
          w.localStorage.removeItem(storageKey);
        } catch (_) {}
        return true;
      },
      getSessionId() {
        try {
          return sessionId();
        } catch (_) {
          return null;
        }
      },
      // Resolves with the session id once the click (if any) has been answered.
      ready() {
        return pending.then(sessionId, () => null).catch(() => null);
      },
      // identify("ann@example.com") or identify({email, customerId}): binds this
      // visitor's session to the customer. Resolves true or false; never rejects.
      identify(who) {
        try {
          const o = typeof who === 'string' ? { email: who } : who || {};
          return pending
            .then(async () => {
              const sid = sessionId();
              if (!sid) return false;
              const body = { sessionId: sid };
              if (o.customerId != null && String(o.customerId) !== '') body.customerId = String(o.customerId);
              const email = typeof o.email === 'string' ? o.email.trim() : '';
              if (email) {
                if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return false;
                // The address leaves the browser only where it cannot be hashed here.
                const hash = await sha256(email.toLowerCase());
                if (hash) body.customerEmailHash = hash;
                else body.customerEmail = email;
              }
              if (Object.keys(body).length < 2) return false;
              return (await post('/api/v1/track/identify', body)) !== null;
            })
            .catch(() => false);
        } catch (_) {
          return Promise.resolve(false);
        }
      },
    };
    w[name] = Object.freeze(tracker);

    const stored = load();
    consented = !!stored; // a stored session means consent was given earlier
    const ref = new URLSearchParams(location.search).get(param);
    if (ref && campaign) {
      if (stored && stored.campaign === campaign && String(stored.ref).toLowerCase() === ref.toLowerCase()) {
        session = stored; // the same link again (a reload): no new click
      } else {
        const body = { campaignId: campaign, ref: ref, url: location.href.slice(0, 2048) };
        if (d.referrer) body.referrer = d.referrer.slice(0, 2048);
        if (stored) body.sessionId = stored.sessionId;
        pending = post('/api/v1/track/click', body)
          .then((r) => {
            if (r && typeof r.sessionId === 'string') {
              session = { sessionId: r.sessionId, expiresAt: r.expiresAt, campaign: campaign, ref: ref };
              save();
            }
          })
          .catch(() => {});
      }
    }
  } catch (_) {
    // Never break the host page.
  }
})();
