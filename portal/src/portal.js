/*! Affiliate portal: one static page, no dependencies, no build step. */
// The portal token comes in the address's fragment (`#token=pt_…`), is taken
// out of the address bar at once and kept in memory only: reloading the page
// without it shows the "expired" message, as any 401 does. Every call goes to
// the same origin with `Authorization: Bearer <token>`; API data reaches the
// page through textContent and attributes only.
(function () {
  'use strict';

  var API = '/api/v1/portal';
  var PAGE_SIZE = 10;
  var INVOICE_TYPES = ['application/pdf', 'image/png', 'image/jpeg'];
  var INVOICE_MAX = 4194304;
  var METHODS = { STRIPE: 'Stripe', PAYPAL: 'PayPal', BANK_TRANSFER: 'Bank transfer', WISE: 'Wise', MANUAL: 'Manual' };
  var EXPIRED = new Error('expired');

  var token = null;
  var expired = false;
  var me = null;
  // `?payouts=done|refresh`: back from Stripe's onboarding (the token did not travel).
  var BACK_FROM = {
    done: 'Thanks — Stripe is reviewing your details.',
    refresh: 'The link expired; start again.',
  };
  var backFrom = BACK_FROM[new URLSearchParams(location.search).get('payouts')] || null;

  function $(id) {
    return document.getElementById(id);
  }

  /** An element with text or children; `attrs` are set with setAttribute (class too). */
  function el(tag, attrs, content) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) node.setAttribute(k, attrs[k]);
      });
    }
    if (content === undefined || content === null) return node;
    (Array.isArray(content) ? content : [content]).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
    });
    return node;
  }

  var liveTimer;
  /** Says `msg` through the page's polite live region (again, even if it is the same text). */
  function announce(msg) {
    var live = $('live');
    live.textContent = '';
    clearTimeout(liveTimer);
    liveTimer = setTimeout(function () {
      live.textContent = msg;
    }, 60);
  }

  // ---------------------------------------------------------------- formats

  var formats = {};
  function money(amount, currency) {
    if (amount === null || amount === undefined) return '–';
    var n = Number(amount);
    if (!currency) return n.toLocaleString();
    try {
      var f = formats[currency] || (formats[currency] = new Intl.NumberFormat(undefined, { style: 'currency', currency: currency }));
      return f.format(n);
    } catch (_) {
      return n.toLocaleString() + ' ' + currency;
    }
  }

  function when(iso, withTime) {
    if (!iso) return '–';
    var d = new Date(iso);
    if (isNaN(d)) return String(iso);
    var text = withTime
      ? d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
      : d.toLocaleDateString(undefined, { dateStyle: 'medium' });
    return el('time', { datetime: iso }, text);
  }

  function whenText(iso) {
    var t = when(iso);
    return typeof t === 'string' ? t : t.textContent;
  }

  /** `INVOICE_UPLOADED` → `Invoice uploaded`. */
  function human(code) {
    if (!code) return '–';
    var s = String(code).replace(/_/g, ' ').toLowerCase();
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  function plural(n, one, many) {
    return n + ' ' + (n === 1 ? one : many);
  }

  function badge(status) {
    return el('span', { class: 'badge', 'data-status': status }, human(status));
  }

  // ---------------------------------------------------------------- API

  function ApiError(status, error, fallback) {
    this.status = status;
    this.code = error && error.code;
    this.message = (error && error.message) || fallback || 'The request failed (HTTP ' + status + ').';
    this.details = error && Array.isArray(error.details) ? error.details : [];
  }

  function errorText(e) {
    if (!(e instanceof ApiError)) return 'Something went wrong.';
    var parts = [e.message];
    e.details.forEach(function (d) {
      if (d && d.message) parts.push(d.message);
    });
    return parts.join(' ');
  }

  /** One call; resolves to the envelope, rejects with an ApiError, or EXPIRED after a 401. */
  function api(method, path, opts) {
    opts = opts || {};
    if (expired) return Promise.reject(EXPIRED);
    var headers = { Authorization: 'Bearer ' + token, Accept: 'application/json' };
    var body = opts.body;
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    Object.keys(opts.headers || {}).forEach(function (k) {
      headers[k] = opts.headers[k];
    });
    return fetch(path, {
      method: method,
      headers: headers,
      body: body,
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    }).then(
      function (res) {
        if (expired) throw EXPIRED;
        if (res.status === 401) {
          expire();
          throw EXPIRED;
        }
        return res.json().then(
          function (doc) {
            if (expired) throw EXPIRED;
            if (!res.ok || !doc || doc.success !== true) throw new ApiError(res.status, doc && doc.error);
            return doc;
          },
          function () {
            if (expired) throw EXPIRED;
            throw new ApiError(res.status, null);
          }
        );
      },
      function () {
        if (expired) throw EXPIRED;
        throw new ApiError(0, null, 'The service could not be reached. Check your connection and try again.');
      }
    );
  }

  /** Shows the expired message and nothing else; forgets the token and every datum shown. */
  function expire() {
    if (expired) return;
    expired = true;
    token = null;
    var campaign = me && me.campaign && me.campaign.name;
    var app = $('app');
    var shown = app && !app.hidden;
    if (app) app.remove();
    $('nav').remove();
    $('who').remove();
    $('loading').hidden = true;
    $('title').textContent = 'Affiliate portal';
    document.title = 'Link expired – Affiliate portal';
    $('expired-msg').textContent = campaign
      ? 'This link has expired. Ask the team running “' + campaign + '” for a new one.'
      : backFrom && !shown
      ? 'Open your portal link again to see your payouts or continue the setup. If it has expired, ask the merchant who sent it for a new one.'
      : 'This link has expired. Ask the merchant who sent it for a new one.';
    if (backFrom && !shown && !campaign) $('expired-h').textContent = 'Open your portal link again';
    $('expired').hidden = false;
    me = null;
    // Whatever had the focus is gone with the portal: put it on the message.
    if (shown && (!document.activeElement || document.activeElement === document.body)) $('expired-h').focus();
  }

  function showError(id, text) {
    var node = $(id);
    node.textContent = text;
    node.hidden = !text;
  }

  // ---------------------------------------------------------------- clipboard

  function copyText(text) {
    function fallback() {
      var active = document.activeElement;
      var area = el('textarea', { readonly: '', class: 'offscreen', 'aria-hidden': 'true', tabindex: '-1' });
      area.value = text;
      document.body.append(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand('copy');
      } catch (_) {
        ok = false;
      }
      area.remove();
      if (active && active.focus) active.focus();
      return ok;
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text).then(
        function () {
          return true;
        },
        function () {
          return fallback();
        }
      );
    }
    return Promise.resolve(fallback());
  }

  function copyButton(label, getText, onFail) {
    var button = el('button', { type: 'button' }, label);
    button.addEventListener('click', function () {
      copyText(getText()).then(function (ok) {
        if (ok) announce('Copied');
        else {
          announce('Could not copy. Select the text and copy it yourself.');
          if (onFail) onFail();
        }
      });
    });
    return button;
  }

  // ---------------------------------------------------------------- me

  function fact(dl, term, value) {
    dl.append(el('dt', null, term), el('dd', null, value));
  }

  function commissionText(c) {
    if (c.commissionType === 'PERCENTAGE') return Number(c.commissionValue) + '% of each payment';
    return money(c.commissionValue, c.currency) + ' per conversion';
  }

  function recurringText(c) {
    if (!c.commissionRecurring) return 'First payment only';
    if (c.recurringMonthsLimit) return 'Every payment, for ' + plural(c.recurringMonthsLimit, 'month', 'months');
    return 'Every payment, for as long as the customer pays';
  }

  function renderMe(data) {
    me = data;
    var a = data.affiliate || {};
    var c = data.campaign || {};
    var title = c.name ? c.name + ' affiliate portal' : 'Affiliate portal';
    $('title').textContent = title;
    document.title = title;
    var who = $('who');
    who.textContent = 'Signed in as ' + a.name + ' (code ' + a.code + ')';
    who.hidden = false;

    // The merchant's page, from the signed token only (http(s), checked again here).
    var back = data.returnUrl;
    if (back && /^https?:\/\/[^\s\/]\S*$/i.test(back)) {
      $('back').href = back;
      $('back').hidden = false;
    }

    var link = data.referralLink;
    $('link').value = link || '';
    $('link-box').hidden = !link;
    $('no-link').hidden = !!link;

    var dl = $('terms');
    dl.replaceChildren();
    fact(dl, 'Name', a.name);
    fact(dl, 'Code', a.code);
    fact(dl, 'Status', badge(a.status));
    fact(dl, 'Campaign', c.name);
    fact(dl, 'Commission', commissionText(c));
    var customers = plural(a.customersReferred || 0, 'paying customer', 'paying customers') + ' referred';
    fact(dl, 'Tier', a.tier ? a.tier.name + ' (since ' + whenText(a.tier.since) + '), ' + customers : 'None yet, ' + customers);
    fact(dl, 'Recurring', recurringText(c));
    fact(dl, 'Cookie', c.cookieDays === null || c.cookieDays === undefined ? '–' : plural(c.cookieDays, 'day', 'days'));
    fact(dl, 'Hold', c.holdDays ? plural(c.holdDays, 'day', 'days') + ' before a conversion is payable' : 'None');
    var min = Number(c.minimumPayout || 0);
    fact(dl, 'Minimum payout', min ? (c.currency ? money(min, c.currency) : min.toLocaleString() + ' in each currency') : 'None');
    fact(dl, 'Payout method', METHODS[a.payoutMethod] || 'Not set');
    fact(dl, 'Payout e-mail', a.payoutEmail || 'Not set');
  }

  function fillSettings() {
    var a = (me && me.affiliate) || {};
    $('f-name').value = a.name || '';
    $('f-method').value = a.payoutMethod || '';
    $('f-email').value = a.payoutEmail || '';
  }

  // ---------------------------------------------------------------- payout account

  var RAIL = {
    PENDING: ['Onboarding not finished', 'Continue setup'],
    RESTRICTED: ['Payouts restricted by Stripe', 'Update your details'],
    ACTIVE: ['Payouts enabled', null],
  };

  // Stripe's `requirements.currently_due`, by their first part; others as `Business type`.
  var NEEDS = {
    external_account: 'A bank account for payouts',
    tos_acceptance: 'Accepting Stripe’s terms of service',
    individual: 'Your personal details',
    company: 'Your company’s details',
    representative: 'Your representative’s details',
    business_profile: 'Your business profile',
  };
  function requirement(r) {
    var s = String(r);
    return NEEDS[s.split('.')[0]] || human(s.replace(/\./g, '_'));
  }

  function renderRail() {
    var a = (me && me.affiliate) || {};
    var acct = a.payoutAccount;
    var state = acct && RAIL[acct.status];
    var due = (acct && acct.requirementsDue) || [];
    var go = $('rail-go');
    var note = $('rail-note');
    $('rail').setAttribute('data-status', acct ? acct.status : 'NONE');
    $('rail-state').replaceChildren.apply(
      $('rail-state'),
      state
        ? [el('strong', null, state[0]), acct.status === 'ACTIVE' ? el('span', { class: 'note' }, 'Stripe account ' + acct.accountId) : '']
        : ['Get paid straight to your bank account through Stripe.']
    );
    var list = $('rail-due-list');
    list.replaceChildren.apply(
      list,
      due
        .map(requirement)
        .filter(function (r, i, all) {
          return all.indexOf(r) === i;
        })
        .map(function (r) {
          return el('li', null, r);
        })
    );
    $('rail-due').hidden = !(state && acct.status !== 'ACTIVE' && due.length);
    var label = state ? state[1] : 'Set up payouts';
    go.textContent = label || '';
    go.hidden = !label;
    var other = acct && acct.status === 'ACTIVE' && a.payoutMethod !== 'STRIPE';
    note.textContent = other ? 'To be paid through this account, choose Stripe as your payout method under Payout details.' : '';
    note.hidden = !other;
  }

  function wireRail() {
    var go = $('rail-go');
    var busy = false;
    go.addEventListener('click', function () {
      if (busy) return;
      busy = true;
      go.setAttribute('aria-disabled', 'true');
      showError('rail-error', '');
      announce('Opening Stripe…');
      api('POST', API + '/payout-account').then(
        function (doc) {
          var url = doc.data && doc.data.url;
          if (!url || !/^https?:\/\//i.test(url)) throw new ApiError(0, null, 'Stripe sent no usable link.');
          location.assign(url);
        }
      ).catch(function (e) {
        if (e === EXPIRED) return;
        busy = false;
        go.removeAttribute('aria-disabled');
        $('live').textContent = '';
        showError(
          'rail-error',
          e instanceof ApiError && e.status === 409
            ? 'Payouts through Stripe are not set up by this program. Ask the merchant how you are paid.'
            : 'Could not open Stripe. ' + errorText(e)
        );
      });
    });
  }

  function loadMe() {
    return api('GET', API + '/me').then(function (doc) {
      renderMe(doc.data);
      fillSettings();
      renderRail();
      renderTax();
      $('loading').hidden = true;
      $('app').hidden = false;
      $('nav').hidden = false;
    });
  }

  // ---------------------------------------------------------------- stats

  var statsSeq = 0;

  /** Gives each cell its column's name, shown before it when the table is stacked (narrow screens). */
  function label(table, row) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(row.cells, function (cell, i) {
      if (heads[i]) cell.setAttribute('data-label', heads[i].textContent);
    });
    return row;
  }

  function fill(table, rows, empty) {
    var body = table.tBodies[0];
    var cols = table.tHead.rows[0].cells.length;
    rows.forEach(function (r) {
      label(table, r);
    });
    body.replaceChildren.apply(body, rows.length ? rows : [el('tr', null, el('td', { colspan: cols, class: 'empty' }, empty))]);
  }

  function loadStats(say) {
    var select = $('period');
    var seq = ++statsSeq;
    var box = $('stats');
    box.setAttribute('aria-busy', 'true');
    var daily = select.value !== 'all' ? '&series=day' : '';
    return api('GET', API + '/stats?period=' + encodeURIComponent(select.value) + daily).then(
      function (doc) {
        if (seq !== statsSeq) return;
        var d = doc.data || {};
        $('stats-range').textContent = d.from ? 'From ' + whenText(d.from) + ' to ' + whenText(d.to) : 'All time, to ' + whenText(d.to);
        $('clicks').textContent = Number(d.clicks || 0).toLocaleString();
        fill(
          $('totals'),
          (d.totals || []).map(function (t) {
            return el('tr', { 'data-currency': t.currency }, [
              el('th', { scope: 'row' }, t.currency),
              el('td', null, Number(t.count).toLocaleString()),
              el('td', null, money(t.revenue, t.currency)),
              el('td', null, money(t.commission, t.currency)),
            ]);
          }),
          'No conversions in this period.'
        );
        fill(
          $('bystatus'),
          (d.byStatus || []).map(function (t) {
            return el('tr', { 'data-status': t.status, 'data-currency': t.currency }, [
              el('th', { scope: 'row' }, badge(t.status)),
              el('td', null, t.currency),
              el('td', null, Number(t.count).toLocaleString()),
              el('td', null, money(t.revenue, t.currency)),
              el('td', null, money(t.commission, t.currency)),
            ]);
          }),
          'No conversions in this period.'
        );
        renderChart(d.series || null);
        showError('stats-error', '');
        box.setAttribute('aria-busy', 'false');
        if (say) announce('Stats updated: ' + select.options[select.selectedIndex].text + '.');
      },
      function (e) {
        if (e === EXPIRED || seq !== statsSeq) return;
        box.setAttribute('aria-busy', 'false');
        showError('stats-error', 'Could not load the stats. ' + errorText(e));
      }
    );
  }

  // ---------------------------------------------------------------- tax form

  var TAX_MAX = 4194304;

  /** The tax form section: shown when the campaign asks for one. */
  function renderTax() {
    var setting = (me.campaign || {}).taxForm;
    $('tax').hidden = !setting;
    if (!setting) return;
    var from = Number(setting.fromAmount || 0);
    $('tax-rule').textContent = setting.required
      ? 'Your payouts wait for a tax form' + (from ? ' once you are paid ' + from.toLocaleString() + ' or more in a year (in each currency).' : '.')
      : 'The programme collects tax forms; payouts do not wait for one.';
    var form = (me.affiliate || {}).taxForm;
    $('tax-state').textContent = form ? 'Sent: ' + form.formType + ', ' + whenText(form.uploadedAt) + '. A new file replaces it.' : 'No tax form sent yet.';
  }

  function wireTax() {
    var busy = false;
    $('tax-send').addEventListener('click', function () {
      if (busy) return;
      var input = $('tax-file');
      var file = input.files && input.files[0];
      var problem = !file ? 'Choose the PDF first.' : file.size > TAX_MAX ? 'The form must be 4 MB or smaller.' : '';
      if (!problem && file.type && file.type !== 'application/pdf') problem = 'The form must be a PDF file.';
      if (problem) {
        showError('tax-error', problem);
        input.focus();
        return;
      }
      busy = true;
      $('tax-send').setAttribute('aria-disabled', 'true');
      var type = $('tax-type').value;
      api('PUT', API + '/tax-form?formType=' + encodeURIComponent(type), {
        body: file,
        headers: { 'Content-Type': 'application/pdf' },
      }).then(
        function (doc) {
          busy = false;
          $('tax-send').removeAttribute('aria-disabled');
          me.affiliate.taxForm = doc.data;
          showError('tax-error', '');
          renderTax();
          announce('Tax form sent: ' + doc.data.formType + '.');
        },
        function (e) {
          if (e === EXPIRED) return;
          busy = false;
          $('tax-send').removeAttribute('aria-disabled');
          showError('tax-error', 'Could not send the tax form. ' + errorText(e));
        }
      );
    });
  }

  // ---------------------------------------------------------------- daily chart

  var SVG_NS = 'http://www.w3.org/2000/svg';

  /** An SVG element with attributes and text. */
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      node.setAttribute(k, attrs[k]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /**
   * Clicks (bars) and conversions (a line with dots) per day, as an inline
   * SVG; each day's figures are also the title of its column, so a reader
   * or a screen reader gets the numbers, not only the shape.
   */
  function renderChart(days) {
    var box = $('chart');
    box.replaceChildren();
    box.hidden = !days || !days.length;
    if (box.hidden) return;
    var conversions = days.map(function (d) {
      return (d.totals || []).reduce(function (n, t) {
        return n + Number(t.count || 0);
      }, 0);
    });
    var clicks = days.map(function (d) {
      return Number(d.clicks || 0);
    });
    var top = Math.max(1, Math.max.apply(null, clicks.concat(conversions)));
    var W = 600, H = 160, pad = 4;
    var step = (W - 2 * pad) / days.length;
    var y = function (v) {
      return H - pad - (v / top) * (H - 2 * pad);
    };
    var totalClicks = clicks.reduce(function (a, b) { return a + b; }, 0);
    var totalConv = conversions.reduce(function (a, b) { return a + b; }, 0);
    var summary = plural(totalClicks, 'click', 'clicks') + ' and ' + plural(totalConv, 'conversion', 'conversions') +
      ' over ' + plural(days.length, 'day', 'days') + ', from ' + days[0].date + ' to ' + days[days.length - 1].date + '.';
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-labelledby': 'chart-title chart-desc', preserveAspectRatio: 'none', class: 'chart' });
    chart.append(svg('title', { id: 'chart-title' }, 'Clicks and conversions per day'));
    chart.append(svg('desc', { id: 'chart-desc' }, summary));
    var points = [];
    days.forEach(function (d, i) {
      var x = pad + i * step;
      var g = svg('g', { class: 'day', 'data-date': d.date, 'data-clicks': clicks[i], 'data-conversions': conversions[i] });
      g.append(svg('title', {}, d.date + ': ' + plural(clicks[i], 'click', 'clicks') + ', ' + plural(conversions[i], 'conversion', 'conversions')));
      g.append(svg('rect', { class: 'clicks', x: x + step * 0.15, width: Math.max(step * 0.7, 0.5), y: y(clicks[i]), height: H - pad - y(clicks[i]) }));
      var cx = x + step / 2;
      points.push(cx + ',' + y(conversions[i]));
      g.append(svg('circle', { class: 'conversions', cx: cx, cy: y(conversions[i]), r: Math.min(3, Math.max(step / 3, 1)) }));
      chart.append(g);
    });
    chart.append(svg('polyline', { class: 'conversions', points: points.join(' '), fill: 'none' }));
    box.append(
      chart,
      el('p', { class: 'legend' }, [
        el('span', { class: 'key clicks' }, 'Clicks'),
        ' ',
        el('span', { class: 'key conversions' }, 'Conversions'),
        ' · ',
        summary,
      ])
    );
  }

  // ---------------------------------------------------------------- paged lists

  /**
   * A table paged by cursor: `cursors[i]` opens page i (null for the first);
   * Next pushes the page's `meta.nextCursor`, Previous goes back one.
   */
  function pager(opts) {
    var table = $(opts.table);
    var prev = $(opts.prefix + '-prev');
    var next = $(opts.prefix + '-next');
    var label = $(opts.prefix + '-page');
    var state = { cursors: [null], page: 0, seq: 0, busy: false };

    function sync() {
      prev.disabled = state.page === 0;
      next.disabled = state.cursors.length <= state.page + 1;
    }

    function load(index, moved) {
      var seq = ++state.seq;
      var cursor = state.cursors[index];
      state.busy = true;
      table.setAttribute('aria-busy', 'true');
      var q = '?limit=' + PAGE_SIZE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
      return api('GET', opts.path + q).then(
        function (doc) {
          if (seq !== state.seq) return;
          state.busy = false;
          table.setAttribute('aria-busy', 'false');
          var meta = doc.meta || {};
          state.page = index;
          state.cursors.length = index + 1;
          if (meta.nextCursor && meta.hasMore !== false) state.cursors.push(meta.nextCursor);
          var rows = (doc.data || []).map(opts.row);
          fill(table, rows, opts.empty);
          label.textContent = 'Page ' + (index + 1);
          var focused = document.activeElement;
          sync();
          showError(opts.prefix + '-error', '');
          if (moved) {
            announce(opts.noun + ', page ' + (index + 1) + (rows.length ? '' : ': none') + '.');
            // Keep focus in the pager when the button just used is now disabled.
            if (focused && focused.disabled) {
              var other = focused === next ? prev : next;
              if (other.disabled) table.setAttribute('tabindex', '-1');
              (other.disabled ? table : other).focus();
            }
          }
        },
        function (e) {
          if (e === EXPIRED || seq !== state.seq) return;
          state.busy = false;
          table.setAttribute('aria-busy', 'false');
          showError(opts.prefix + '-error', 'Could not load the ' + opts.noun.toLowerCase() + '. ' + errorText(e));
        }
      );
    }

    prev.addEventListener('click', function () {
      if (!state.busy && state.page > 0) load(state.page - 1, true);
    });
    next.addEventListener('click', function () {
      if (!state.busy && state.cursors.length > state.page + 1) load(state.page + 1, true);
    });
    sync();
    return {
      first: function () {
        state.cursors = [null];
        state.page = 0;
        return load(0, false);
      },
    };
  }

  /** Why a conversion earns what it earns: the rule, tier or rate that decided. */
  function sourceText(s) {
    if (!s) return '';
    var named = s.name ? ' “' + s.name + '”' : '';
    return { OVERRIDE: 'Your own rate', RULE: 'Rule' + named, TIER: 'Tier' + named, CAMPAIGN: 'Campaign rate' }[s.kind] || '';
  }

  function conversionRow(c) {
    var commission = [money(c.commission, c.currency)];
    var why = sourceText(c.commissionSource);
    if (why) commission.push(el('span', { class: 'note' }, why));
    if (Number(c.commissionReversed) > 0) {
      commission.push(el('span', { class: 'note' }, money(c.commissionReversed, c.currency) + ' reversed'));
    }
    var status = [badge(c.status)];
    if (c.conversionType === 'LEAD') status.push(el('span', { class: 'note' }, 'Sign-up'));
    else if (c.paymentNumber > 1) status.push(el('span', { class: 'note' }, 'Payment ' + c.paymentNumber));
    if (c.isRecurring) status.push(el('span', { class: 'note' }, 'Recurring'));
    if (c.payoutId) status.push(el('span', { class: 'note' }, 'In a payout'));
    return el('tr', { 'data-id': c.id }, [
      el('th', { scope: 'row' }, when(c.occurredAt, true)),
      el('td', null, money(c.amount, c.currency)),
      el('td', null, commission),
      el('td', null, status),
    ]);
  }

  function invoiceType(file) {
    if (file.type) return file.type;
    var ext = (file.name.split('.').pop() || '').toLowerCase();
    return { pdf: 'application/pdf', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg' }[ext] || '';
  }

  /** A header value must be Latin-1; other characters become `_`. */
  function headerSafe(name) {
    return name.replace(/[^\x20-\x7e]/g, '_');
  }

  var uploads = 0;
  /** The upload of a payout's invoice; `replacing`: a new file for the one sent (until approval). */
  function invoiceForm(p, row, replacing) {
    var n = ++uploads;
    var what = ' for the payout of ' + money(p.amount, p.currency) + ' requested ' + whenText(p.requestedAt);
    var input = el('input', { type: 'file', id: 'invoice-' + n, accept: 'application/pdf,image/png,image/jpeg,.pdf,.png,.jpg,.jpeg' });
    var button = el('button', { type: 'button' }, [replacing ? 'Replace' : 'Upload', el('span', { class: 'sr-only' }, ' invoice' + what)]);
    var msg = el('span', { class: 'msg', role: 'status' });
    var busy = false;
    button.addEventListener('click', function () {
      if (busy) return;
      var file = input.files && input.files[0];
      if (!file) {
        msg.textContent = 'Choose a file first.';
        input.focus();
        return;
      }
      var type = invoiceType(file);
      if (INVOICE_TYPES.indexOf(type) < 0) {
        msg.textContent = 'The invoice must be a PDF, PNG or JPEG file.';
        input.focus();
        return;
      }
      if (file.size > INVOICE_MAX) {
        msg.textContent = 'The invoice must be 4 MB or smaller.';
        input.focus();
        return;
      }
      busy = true;
      button.setAttribute('aria-disabled', 'true');
      msg.textContent = 'Uploading…';
      api('PUT', API + '/payouts/' + encodeURIComponent(p.id) + '/invoice', {
        body: file,
        headers: { 'Content-Type': type, 'X-File-Name': headerSafe(file.name) },
      }).then(
        function (doc) {
          var fresh = label($('payouts'), payoutRow(doc.data));
          row.replaceWith(fresh);
          var badgeEl = fresh.querySelector('.badge');
          badgeEl.setAttribute('tabindex', '-1');
          badgeEl.focus();
          announce((replacing ? 'Invoice replaced' : 'Invoice uploaded') + '. The payout is now: ' + human(doc.data.status) + '.');
        },
        function (e) {
          if (e === EXPIRED) return;
          busy = false;
          button.removeAttribute('aria-disabled');
          msg.textContent = 'Upload failed. ' + errorText(e);
        }
      );
    });
    return el('div', { class: 'upload' }, [
      el('label', { for: input.id }, [replacing ? 'New invoice (PDF, PNG or JPEG)' : 'Invoice (PDF, PNG or JPEG)', el('span', { class: 'sr-only' }, what)]),
      input,
      button,
      msg,
    ]);
  }

  function payoutRow(p) {
    var row = el('tr', { 'data-id': p.id });
    var amount = [money(p.amount, p.currency), el('span', { class: 'note' }, plural(p.conversionCount || 0, 'conversion', 'conversions'))];
    if (Number(p.adjustmentTotal) < 0) amount.push(el('span', { class: 'note' }, money(p.adjustmentTotal, p.currency) + ' clawed back'));
    var status = [badge(p.status)];
    if (p.paidAt) status.push(el('span', { class: 'note' }, ['Paid ', when(p.paidAt)]));
    var inv = p.invoice || {};
    var invoice;
    if (inv.uploaded) {
      invoice = [el('span', { class: 'file' }, inv.fileName || 'Uploaded')];
      if (inv.uploadedAt) invoice.push(el('span', { class: 'note' }, ['Uploaded ', when(inv.uploadedAt)]));
      // Until the merchant approves it, a new file replaces this one.
      if (p.status === 'INVOICE_UPLOADED') invoice.push(invoiceForm(p, row, true));
    } else if (p.status === 'PENDING') {
      invoice = invoiceForm(p, row, false);
    } else {
      invoice = '–';
    }
    row.append(
      el('th', { scope: 'row' }, when(p.requestedAt)),
      el('td', null, amount),
      el('td', { class: 'status' }, status),
      el('td', null, invoice)
    );
    return row;
  }

  // ---------------------------------------------------------------- adjustments

  function adjustmentRow(a) {
    return el('tr', { 'data-id': a.id }, [
      el('th', { scope: 'row' }, when(a.createdAt)),
      el('td', null, money(a.amount, a.currency)),
      el('td', null, a.reason),
      el('td', null, a.payoutId ? 'In a payout' : 'With your next payout'),
    ]);
  }

  // ---------------------------------------------------------------- promotion codes

  function loadPromotionCodes() {
    return api('GET', API + '/promotion-codes?limit=100').then(
      function (doc) {
        var list = $('promos');
        var codes = (doc.data || []).filter(function (c) {
          return c.active && c.code;
        });
        list.replaceChildren.apply(
          list,
          codes.length
            ? codes.map(function (c) {
                var code = el('code', null, c.code);
                var button = copyButton(
                  ['Copy', el('span', { class: 'sr-only' }, ' ' + c.code)],
                  function () {
                    return c.code;
                  },
                  function () {
                    window.getSelection().selectAllChildren(code);
                  }
                );
                return el('li', { class: 'promo' }, [code, ' ', button]);
              })
            : [el('li', null, 'No promotion codes yet.')]
        );
        showError('promos-error', '');
      },
      function (e) {
        if (e === EXPIRED) return;
        showError('promos-error', 'Could not load your promotion codes. ' + errorText(e));
      }
    );
  }

  // ---------------------------------------------------------------- assets

  function loadAssets() {
    return api('GET', API + '/assets').then(
      function (doc) {
        var box = $('assets');
        var swipe = (doc.data || []).filter(function (a) {
          return a.type === 'SWIPE_COPY' && a.body;
        });
        box.replaceChildren.apply(
          box,
          swipe.length
            ? swipe.map(function (a, i) {
                var text = el('p', { class: 'swipe', id: 'swipe-' + i }, a.body);
                var button = copyButton(
                  ['Copy', el('span', { class: 'sr-only' }, ' “' + a.name + '”')],
                  function () {
                    return a.body;
                  },
                  function () {
                    window.getSelection().selectAllChildren(text);
                  }
                );
                return el('article', { class: 'asset', 'data-id': a.id }, [el('h3', null, a.name), text, button]);
              })
            : [el('p', null, 'No swipe copy yet.')]
        );
        showError('assets-error', '');
      },
      function (e) {
        if (e === EXPIRED) return;
        showError('assets-error', 'Could not load the swipe copy. ' + errorText(e));
      }
    );
  }

  // ---------------------------------------------------------------- payout details

  var FIELDS = { name: 'f-name', payoutMethod: 'f-method', payoutEmail: 'f-email' };

  function clearFieldErrors() {
    Object.keys(FIELDS).forEach(function (k) {
      var input = $(FIELDS[k]);
      input.removeAttribute('aria-invalid');
      input.removeAttribute('aria-describedby');
      var old = $(FIELDS[k] + '-error');
      if (old) old.remove();
    });
    var box = $('settings-errors');
    box.replaceChildren();
    box.hidden = true;
  }

  function showFieldErrors(e) {
    var box = $('settings-errors');
    var list = el('ul');
    var first = null;
    e.details.forEach(function (d) {
      if (!d || !d.message) return;
      list.append(el('li', null, d.message));
      var key = Array.isArray(d.path) ? d.path[0] : null;
      var id = FIELDS[key];
      if (!id) return;
      var input = $(id);
      input.setAttribute('aria-invalid', 'true');
      var note = $(id + '-error');
      if (!note) {
        note = el('p', { id: id + '-error', class: 'field-error' });
        input.after(note);
        input.setAttribute('aria-describedby', note.id);
      }
      note.textContent = note.textContent ? note.textContent + ' ' + d.message : d.message;
      if (!first) first = input;
    });
    box.replaceChildren(el('p', null, e.message || 'The details could not be saved.'));
    if (list.childNodes.length) box.append(list);
    box.hidden = false;
    (first || box).focus();
  }

  function wireSettings() {
    var form = $('settings');
    var busy = false;
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (busy || !me) return;
      clearFieldErrors();
      var a = me.affiliate || {};
      var body = {};
      var name = $('f-name').value.trim();
      var method = $('f-method').value;
      var email = $('f-email').value.trim();
      if (name !== a.name) body.name = name;
      if (method && method !== a.payoutMethod) body.payoutMethod = method;
      if (email !== (a.payoutEmail || '')) body.payoutEmail = email || null;
      if (!Object.keys(body).length) {
        announce('Nothing changed.');
        return;
      }
      busy = true;
      $('save').setAttribute('aria-disabled', 'true');
      announce('Saving…');
      api('PATCH', API + '/me', { json: body }).then(
        function (doc) {
          busy = false;
          $('save').removeAttribute('aria-disabled');
          renderMe(doc.data);
          fillSettings();
          renderRail();
          announce('Payout details saved.');
        },
        function (e) {
          if (e === EXPIRED) return;
          busy = false;
          $('save').removeAttribute('aria-disabled');
          $('live').textContent = '';
          if (e instanceof ApiError) showFieldErrors(e);
          else showFieldErrors(new ApiError(0, null, 'The details could not be saved.'));
        }
      );
    });
  }

  // ---------------------------------------------------------------- start

  function readToken() {
    var hash = location.hash.replace(/^#/, '');
    if (!hash) return null;
    var value = new URLSearchParams(hash).get('token');
    // Out of the address bar (and of history, bookmarks, screenshots) at once.
    history.replaceState(history.state, '', location.pathname + location.search);
    return value && /^\S+$/.test(value) ? value : null;
  }

  function start() {
    if (backFrom) {
      $('notice').textContent = backFrom;
      $('notice').hidden = false;
    }
    // A new link opened in this tab changes only the fragment: load it afresh.
    window.addEventListener('hashchange', function () {
      if (/(^#|&)token=/.test(location.hash)) location.reload();
    });
    token = readToken();
    if (!token) {
      expire();
      return;
    }

    var conversions = pager({
      table: 'conversions',
      prefix: 'conv',
      path: API + '/conversions',
      row: conversionRow,
      empty: 'No conversions yet.',
      noun: 'Conversions',
    });
    var payouts = pager({
      table: 'payouts',
      prefix: 'pay',
      path: API + '/payouts',
      row: payoutRow,
      empty: 'No payouts yet.',
      noun: 'Payouts',
    });
    var adjustments = pager({
      table: 'adjustments',
      prefix: 'adj',
      path: API + '/adjustments',
      row: adjustmentRow,
      empty: 'No adjustments yet.',
      noun: 'Adjustments',
    });

    $('copy-link').addEventListener('click', function () {
      copyText($('link').value).then(function (ok) {
        if (ok) announce('Copied');
        else {
          announce('Could not copy. The link is selected: copy it yourself.');
          $('link').select();
        }
      });
    });
    $('link').addEventListener('focus', function () {
      this.select();
    });
    $('period').addEventListener('change', function () {
      loadStats(true);
    });
    wireSettings();
    wireRail();
    wireTax();

    function all() {
      var loading = $('loading');
      loading.replaceChildren('Loading…');
      loading.hidden = false;
      loadMe().catch(function (e) {
        if (e === EXPIRED) return;
        var retry = el('button', { type: 'button' }, 'Try again');
        retry.addEventListener('click', all);
        loading.replaceChildren('Your portal could not be loaded. ' + errorText(e) + ' ', retry);
      });
      loadStats(false);
      conversions.first();
      payouts.first();
      adjustments.first();
      loadPromotionCodes();
      loadAssets();
    }
    all();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
