/* The person's page: talks to the session REST API like any other client.
 *
 * - The token goes only in the X-Session-Token header, never in a URL; no cookie is sent
 *   (credentials: "omit") and none is needed.
 * - The tab keeps the session's id and token in sessionStorage (gone when the tab closes);
 *   the person sees them as one "session key": "<session id>.<token>", in the key panel once
 *   and by "Copy session key" after. The key goes nowhere else from here: to the browser's
 *   password manager (the Credential Management API, where the browser has it), into a text
 *   file made in the tab (a Blob), or to the clipboard, as the person asks; never into a URL,
 *   a cookie, localStorage or the console. Until it went to one of those, the tab asks before
 *   it closes (beforeunload).
 * - A deletion receipt is found by its receipt lookup, which this script computes from the token
 *   (receiptLookup, WebCrypto): the session id alone leads to no receipt, and the page shows no
 *   session id outside the key itself (file names, the verify command).
 * - Every text comes from the page (#page-strings, translated by the server); what the
 *   API answers (error details such as the one 404, the person's own messages) is shown as it
 *   comes, as text (textContent, text nodes), never as HTML. Replies, their drafts as they stream
 *   and plans are Markdown: rendered by markdown-it with raw HTML off, then sanitised by DOMPurify
 *   to the few elements Markdown makes (renderMarkdown), never the model's own HTML.
 */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("page-config").textContent);
  const strings = JSON.parse(document.getElementById("page-strings").textContent);
  const lang = document.documentElement.lang || undefined;
  const dateFormat = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });
  const numberFormat = new Intl.NumberFormat(lang);

  const $ = (id) => document.getElementById(id);
  const views = ["start-view", "key-view", "session-view", "deleted-view"];

  let current = null; // {id, token} of the open session
  let planShown; // the plan version last drawn (undefined: none yet for this session; null: no plan)
  let expiresAt = null; // Date
  let expiryChecked = null; // the expiresAt (ms) already checked with the API once it passed
  let ticker = null;
  let keyUnsaved = false; // a new session's key not yet saved, copied or downloaded
  let switchingLanguage = false; // the page reloads in this tab, whose sessionStorage keeps the key

  // --- small helpers ---------------------------------------------------------

  /** Fills %(name)s placeholders (the server's python-format strings); %% is a percent sign. */
  function fmt(template, values) {
    return template.replace(/%(?:\((\w+)\)s|%)/g, (match, name) => {
      if (name === undefined) return "%";
      return Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : match;
    });
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function formatTime(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? String(iso) : dateFormat.format(date);
  }

  function timeElement(iso) {
    const node = element("time", "", formatTime(iso));
    node.dateTime = iso;
    return node;
  }

  function show(...ids) {
    for (const id of views) $(id).hidden = !ids.includes(id);
  }

  function setStatus(text) {
    $("status").textContent = text || "";
  }

  function setAlert(text) {
    $("alert").textContent = text || "";
    $("alert").hidden = !text;
  }

  function busy(button, on) {
    button.disabled = on;
  }

  function characterCount(text) {
    return Array.from(text).length; // code points, as the server counts
  }

  // --- the tab's memory of the session -----------------------------------------

  function remember(session) {
    try {
      sessionStorage.setItem(config.storageKey, JSON.stringify(session));
    } catch (error) {
      // Storage refused (private mode, quota): the page still works until reloaded.
    }
  }

  function forget() {
    current = null;
    updateKeepButton();
    keyKept(); // nothing left to lose
    expiresAt = null;
    if (ticker !== null) {
      clearInterval(ticker);
      ticker = null;
    }
    try {
      sessionStorage.removeItem(config.storageKey);
    } catch (error) {
      // nothing to remove
    }
  }

  function remembered() {
    try {
      const value = JSON.parse(sessionStorage.getItem(config.storageKey) || "null");
      if (value && typeof value.id === "string" && typeof value.token === "string") return value;
    } catch (error) {
      // unreadable: treated as nothing remembered
    }
    return null;
  }

  function sessionKey(session) {
    return `${session.id}.${session.token}`;
  }

  function parseKey(text) {
    const key = text.trim();
    const dot = key.indexOf(".");
    // Whatever was pasted goes to the API, which answers every miss with its one 404.
    return dot < 0 ? { id: key, token: "" } : { id: key.slice(0, dot), token: key.slice(dot + 1) };
  }

  // --- the API ------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body && typeof body.detail === "string") return body.detail;
      for (const value of Object.values(body || {})) {
        if (Array.isArray(value) && typeof value[0] === "string") return value[0];
      }
    } catch (error) {
      // not JSON
    }
    return fmt(strings.error_status, { status: response.status });
  }

  async function request(method, url, { token, body, accountToken } = {}) {
    const headers = { Accept: "application/json" };
    if (token !== undefined) headers[config.tokenHeader] = token;
    if (accountToken !== undefined) headers[config.account.tokenHeader] = accountToken;
    // A form (a resume file) sets its own multipart Content-Type; anything else goes as JSON.
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined || form ? body : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (error) {
      throw new ApiError(0, strings.network_error);
    }
    if (!response.ok) throw new ApiError(response.status, await errorText(response));
    return response;
  }

  /** One Server-Sent Event block ("event: x" and "data: {json}" lines); null for a comment. */
  function parseEvent(block) {
    let name = null;
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    return name === null ? null : { name, data: JSON.parse(data) };
  }

  /**
   * Sends a message as a streamed turn (Accept: text/event-stream): each progress event goes to
   * onProgress (a stage and its label in the page's language) and each text event to onText (the
   * next piece of the reply's draft, {text, model_call}) while the turn runs; resolves with the
   * reply once the server has verified and stored it. Aborting `signal` hangs up: the server stops
   * the turn and stores nothing of it.
   */
  async function streamTurn(text, { signal, onProgress, onText }) {
    const session = current;
    let response;
    try {
      response = await fetch(sessionUrl(session, "/messages"), {
        method: "POST",
        headers: {
          Accept: "text/event-stream",
          "Content-Type": "application/json",
          [config.tokenHeader]: session.token,
        },
        body: JSON.stringify({ message: text }),
        credentials: "omit",
        cache: "no-store",
        signal,
      });
    } catch (error) {
      throw new ApiError(0, strings.network_error);
    }
    if (!response.ok) throw new ApiError(response.status, await errorText(response));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = parseEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event === null) continue;
          if (event.name === "progress") onProgress(event.data);
          else if (event.name === "text") onText(event.data);
          else if (event.name === "reply") return event.data;
          else if (event.name === "error") {
            const detail = event.data.detail || fmt(strings.error_status, { status: event.data.status });
            throw new ApiError(event.data.status, detail);
          }
        }
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw new ApiError(0, strings.network_error);
    }
    throw new ApiError(0, strings.network_error); // the stream ended without a reply
  }

  function sessionUrl(session, suffix) {
    return `${config.sessionsUrl}/${encodeURIComponent(session.id)}${suffix || ""}`;
  }

  async function callSession(method, suffix, body) {
    const session = current;
    return request(method, sessionUrl(session, suffix), { token: session.token, body });
  }

  /** An error from a call on the open session: a 404 means it is gone (not found, expired, deleted). */
  function failed(error) {
    setStatus("");
    if (error instanceof ApiError && error.status === 404) {
      forget();
      show("start-view");
      setAlert(error.message);
      $("alert").scrollIntoView({ block: "nearest" });
      return;
    }
    setAlert(error instanceof ApiError ? error.message : strings.network_error);
  }

  // --- rendering --------------------------------------------------------------------

  /** The expiry line; from the ticker, a passed expiry is checked with the API once (its 404 closes the session). */
  function renderExpiry(fromTicker = false) {
    if (expiresAt === null) return;
    const minutesLeft = Math.floor((expiresAt.getTime() - Date.now()) / 60000);
    if (fromTicker && expiresAt.getTime() <= Date.now() && expiryChecked !== expiresAt.getTime()) {
      expiryChecked = expiresAt.getTime(); // once: this clock may run ahead of the server's
      refreshMetadata().catch(failed);
    }
    let remaining;
    if (minutesLeft < 1) remaining = strings.remaining_less;
    else if (minutesLeft < 60) remaining = fmt(strings.remaining_minutes, { minutes: minutesLeft });
    else {
      remaining = fmt(strings.remaining_hours, {
        hours: numberFormat.format(Math.floor(minutesLeft / 60)),
        minutes: minutesLeft % 60,
      });
    }
    $("expiry").textContent = fmt(strings.expires, {
      time: dateFormat.format(expiresAt),
      remaining,
      max_age: strings.max_age,
    });
  }

  /** "Model: …", the offline model by a name in the page's language (it has no product name). */
  function modelLine(model) {
    return fmt(strings.model, { model: model === config.offlineModel ? strings.offline_model : model });
  }

  function renderModel(model) {
    if (!model) return;
    $("model-in-use").textContent = modelLine(model);
    $("model-in-use").hidden = false;
  }

  /** The session's flags (metadata.flags): kind label, where it came from, the line as written. */
  function renderFlags(flags) {
    const list = $("flag-list");
    list.replaceChildren();
    for (const flag of flags || []) {
      const item = element("li", `flag flag-${flag.source}`);
      item.dataset.kind = flag.kind;
      item.append(element("strong", "flag-label", flag.label));
      const source = flag.source === "screen" ? strings.flag_screen : strings.flag_model;
      const where = flag.line ? `${fmt(strings.flag_line, { line: flag.line })}, ${source}` : source;
      item.append(" ", element("span", "flag-where", `(${where})`));
      if (flag.excerpt) item.append(element("q", "flag-excerpt", flag.excerpt));
      list.append(item);
    }
    $("flags").hidden = !list.children.length;
  }

  function messageItem(role, text, timestamp) {
    const item = element("li", `message message-${role}`);
    const who = element("p", "who", role === "user" ? strings.you : strings.agent);
    if (timestamp) {
      who.append(" ");
      who.append(timeElement(timestamp));
    }
    // The person's words as typed; the agent's as the Markdown they are written in.
    item.append(who, role === "user" ? element("div", "text", text) : markdownBlock("text", text));
    return item;
  }

  // --- Markdown ----------------------------------------------------------------------
  // What the model writes is Markdown. markdown-it (vendor/, pinned in sessions_app/page/vendor/)
  // renders it with raw HTML off (a <script> or <img onerror> in a reply is shown as the text it
  // is), no images (nothing is fetched) and links to http(s) and mailto only; DOMPurify then keeps
  // only the elements and attributes listed here. One function for the draft, the live reply, the
  // reply read back and the plan, so that they look the same.
  const markdown = window.markdownit({ html: false, linkify: false, typographer: false, breaks: true });
  markdown.disable(["image"]);
  const SAFE_LINK = /^(?:https?:|mailto:)/i;
  const validLink = markdown.validateLink.bind(markdown);
  markdown.validateLink = (url) => SAFE_LINK.test(url.trim()) && validLink(url);
  const SANITISE = {
    ALLOWED_TAGS: ["p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "em", "strong", "del", "s",
      "code", "pre", "blockquote", "hr", "a", "table", "thead", "tbody", "tr", "th", "td"],
    ALLOWED_ATTR: ["href", "start"],
    ALLOWED_URI_REGEXP: SAFE_LINK,
    RETURN_DOM_FRAGMENT: true,
  };
  const HEADINGS = "h1, h2, h3, h4, h5, h6";

  /** `container`'s content: `text` rendered from Markdown and sanitised. */
  function renderMarkdown(container, text) {
    const fragment = window.DOMPurify.sanitize(markdown.render(text || ""), SANITISE);
    // Headings sit under the conversation's and the plan's own (h3): the levels a text uses become
    // h4, h5, h6 in their order, so that the page's outline stays whole.
    const levels = [...new Set([...fragment.querySelectorAll(HEADINGS)].map((node) => Number(node.tagName[1])))].sort();
    for (const heading of fragment.querySelectorAll(HEADINGS)) {
      const level = Math.min(6, 4 + levels.indexOf(Number(heading.tagName[1])));
      const renamed = document.createElement(`h${level}`);
      renamed.append(...heading.childNodes);
      heading.replaceWith(renamed);
    }
    for (const link of fragment.querySelectorAll("a")) link.rel = "noopener noreferrer nofollow";
    container.replaceChildren(fragment);
    return container;
  }

  function markdownBlock(className, text) {
    return renderMarkdown(element("div", `${className} markdown`), text);
  }

  // Quotation marks around a whole claim: <q> adds the language's own (issue 44: ““…”” and 「「…」」).
  const QUOTES = [["“", "”"], ["「", "」"], ["『", "』"], ["‘", "’"], ['"', '"'], ["'", "'"]];

  function unquoted(text) {
    let claim = text.trim();
    for (;;) {
      const pair = QUOTES.find(([open, close]) => claim.length > 2 && claim.startsWith(open) && claim.endsWith(close));
      if (!pair) return claim;
      claim = claim.slice(pair[0].length, -pair[1].length).trim();
    }
  }

  function checksBlock(verification) {
    const block = element("section", "checks");
    block.append(element("h4", "", strings.checks));
    if (!verification.length) {
      block.append(element("p", "help", strings.no_checks));
      return block;
    }
    const list = element("ul");
    for (const check of verification) {
      const item = element("li", `claim ${check.supported ? "supported" : "unsupported"}`);
      item.append(element("span", "verdict", check.supported ? strings.supported : strings.unsupported));
      item.append(element("q", "", unquoted(check.claim)));
      if (check.evidence) item.append(element("p", "evidence", fmt(strings.evidence, { evidence: check.evidence })));
      list.append(item);
    }
    block.append(list);
    return block;
  }

  function toolCallsBlock(calls) {
    const details = element("details", "tool-calls");
    details.append(element("summary", "", fmt(strings.tool_calls, { count: calls.length })));
    const list = element("ol");
    for (const call of calls) {
      const item = element("li");
      item.append(element("code", "", call.name));
      item.append(element("pre", "", JSON.stringify(call.args, null, 2)));
      list.append(item);
    }
    details.append(list);
    return details;
  }

  function appendMessage(item) {
    $("conversation").append(item);
    $("conversation-empty").hidden = true;
  }

  function removeMessage(item) {
    item.remove();
    $("conversation-empty").hidden = $("conversation").children.length > 0;
  }

  /**
   * A reply as the page shows it, live or read back (the API's history gives each reply the same
   * claim checks, tool calls and model its turn answered with; null for a reply stored before).
   */
  function replyItem(reply) {
    const item = messageItem("agent", reply.text, reply.timestamp);
    if (reply.verification) item.append(checksBlock(reply.verification));
    if (reply.tool_calls) item.append(toolCallsBlock(reply.tool_calls));
    if (reply.model) item.append(element("p", "model", fmt(strings.model, { model: reply.model })));
    item.append(copyButton(strings.copy_reply, reply.text)); // at its end, where reading it ends
    return item;
  }

  /**
   * The reply being written, where it will stand: the turn's progress (announced politely, as it
   * changes) and the draft the server streams (not announced piece by piece: the finished reply is,
   * once, by announceReply). Each model call's draft replaces the one before.
   */
  function pendingReply() {
    const item = element("li", "message message-agent pending");
    item.setAttribute("aria-busy", "true");
    const progress = element("p", "progress", strings.sending);
    progress.setAttribute("role", "status");
    const draft = element("div", "text draft markdown");
    item.append(element("p", "who", strings.agent), progress, draft);
    let modelCall = null;
    let written = ""; // the draft so far, rendered whole at each piece as the reply will be
    return {
      item,
      progress: (stage) => {
        progress.textContent = stage.label;
        if (stage.stage === "saving") $("stop-button").hidden = true; // being stored: too late to stop
      },
      text: (piece) => {
        if (piece.model_call !== modelCall) written = "";
        modelCall = piece.model_call;
        written += piece.text;
        renderMarkdown(draft, written);
      },
    };
  }

  /**
   * The finished reply, said once to screen readers (a live region outside the conversation): the
   * text of `reply` as the page shows it, rendered from Markdown and sanitised (renderMarkdown), so
   * that its markers (**, -, #) are not read out.
   */
  function announceReply(reply) {
    const text = reply.querySelector(":scope > .text").textContent.trim();
    $("reply-announcer").textContent = fmt(strings.reply_announcement, { reply: text });
  }

  function renderConversation(messages) {
    $("conversation").replaceChildren();
    for (const message of messages) {
      appendMessage(message.role === "agent" ? replyItem(message) : messageItem(message.role, message.text, message.timestamp));
    }
    $("conversation-empty").hidden = messages.length > 0;
  }

  function planBlock(version, className) {
    const block = element("div", className);
    block.append(element("p", "help", fmt(strings.plan_version, { version: version.version, time: formatTime(version.saved_at) })));
    block.append(markdownBlock("plan-text", version.plan));
    if (className.includes("current")) block.append(copyButton(strings.copy_plan, version.plan));
    return block;
  }

  function renderPlan(plan) {
    const version = plan.current ? plan.current.version : null;
    // A plan that changes while the phone shows the conversation marks its tab until it is looked at.
    if (planShown !== undefined && version !== planShown && phone.matches && !tabSelected("plan")) markPlanTab(true);
    planShown = version;
    const target = $("plan-current");
    target.replaceChildren();
    if (!plan.current) {
      target.append(element("p", "help", strings.no_plan));
    } else {
      target.append(planBlock(plan.current, "plan-version current"));
    }
    const earlier = plan.versions.filter((version) => !plan.current || version.version !== plan.current.version);
    const list = $("plan-versions");
    list.replaceChildren();
    for (const version of earlier.slice().reverse()) {
      const item = element("li");
      item.append(planBlock(version, "plan-version"));
      list.append(item);
    }
    $("plan-history-summary").textContent = fmt(strings.earlier_versions, { count: earlier.length });
    $("plan-history").hidden = earlier.length === 0;
  }

  // --- what the person does -----------------------------------------------------------

  async function refreshMetadata() {
    const metadata = await (await callSession("GET")).json();
    expiresAt = new Date(metadata.expires_at);
    renderExpiry();
    renderFlags(metadata.flags);
    return metadata;
  }

  async function refreshPlan() {
    renderPlan(await (await callSession("GET", "/plan")).json());
  }

  async function openSession(session, { fresh = false } = {}) {
    current = session;
    renderDocument(null); // a file's text is shown once, in the tab that sent it
    planShown = undefined;
    markPlanTab(false);
    $("model-in-use").hidden = true;
    setStatus(strings.opening);
    await refreshMetadata();
    remember(session); // it opened: the tab keeps it
    const conversation = await (await callSession("GET", "/messages")).json();
    renderConversation(conversation.messages);
    await refreshPlan();
    selectTab("conversation");
    if (ticker === null) ticker = setInterval(() => renderExpiry(true), 15000);
    setStatus("");
    setAlert("");
    show(fresh ? "key-view" : "session-view", "session-view");
    updateKeepButton();
  }

  // --- a resume as a file -------------------------------------------------------

  let chosenFile = null; // a File dropped or picked; sent instead of the text box

  function chooseFile(file) {
    chosenFile = file || null;
    $("resume-text").required = chosenFile === null;
    $("file-chosen").hidden = chosenFile === null;
    $("file-chosen").textContent = chosenFile === null ? "" : fmt(strings.file_chosen, { name: chosenFile.name });
  }

  /** What the server read from the file: its text, and the lines a reader of it would not see. */
  function renderDocument(read) {
    $("document").hidden = !read;
    if (!read) {
      // Nothing of the resume stays in the page once its session is closed or deleted.
      for (const id of ["document-summary", "document-text", "hidden-lines"]) $(id).replaceChildren();
      $("hidden-notice").firstElementChild.textContent = "";
      return;
    }
    $("document-summary").textContent = fmt(strings.document_summary, {
      pages: numberFormat.format(read.pages),
      characters: numberFormat.format(read.characters),
      lines: read.lines_per_page.map((count) => numberFormat.format(count)).join(", "),
    });
    $("document-text").textContent = read.text;
    $("hidden-block").hidden = read.hidden_lines.length === 0;
    $("hidden-notice").firstElementChild.textContent = read.hidden_notice || "";
    $("hidden-lines").replaceChildren(
      ...read.hidden_lines.map((hidden) => {
        const item = element("li", "hidden-line", fmt(strings.hidden_line, { ...hidden, reason: hidden.label }) + " ");
        item.append(element("q", "", hidden.text));
        return item;
      }),
    );
  }

  function resumeBody() {
    if (chosenFile === null) return { resume_text: $("resume-text").value };
    const form = new FormData();
    form.append("file", chosenFile, chosenFile.name);
    return form;
  }

  async function startSession(event) {
    event.preventDefault();
    const button = $("start-button");
    busy(button, true);
    setAlert("");
    setStatus(chosenFile === null ? strings.starting : strings.reading_file);
    try {
      const response = await request("POST", config.sessionsUrl, { body: resumeBody() });
      const created = await response.json();
      const session = { id: created.session_id, token: created.token };
      remember(session); // at once: the only copy of the token
      showKey(session);
      await openSession(session, { fresh: true });
      renderDocument(created.document);
      $("resume-text").value = "";
      $("resume-file").value = "";
      chooseFile(null);
      updateResumeCount();
      $("key-heading").focus();
    } catch (error) {
      if (current !== null) failed(error);
      else {
        setStatus("");
        setAlert(error.message || strings.network_error);
      }
    } finally {
      busy(button, false);
    }
  }

  async function openFromKey(event) {
    event.preventDefault();
    const button = $("open-button");
    busy(button, true);
    setAlert("");
    try {
      await openSession(parseKey($("open-key").value));
      $("open-key").value = "";
      $("session-heading").focus();
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) current = null; // not opened
      failed(error);
      if (error instanceof ApiError && error.status === 404) setStatus(strings.maybe_erased);
    } finally {
      busy(button, false);
    }
  }

  let turn = null; // the AbortController of the turn running, if one is
  let turnEnded = Promise.resolve(); // settles once that turn is over on the page

  /**
   * Sends the message: it is shown at once, the reply is written below it as it comes (its
   * progress with it), and the verified reply replaces the draft. Stopped or failed, nothing of
   * the turn was stored: both go, and the message is back in the box.
   */
  async function sendMessage(event) {
    event.preventDefault();
    if (turn !== null) return;
    const field = $("message-text");
    const text = field.value;
    const button = $("send-button");
    busy(button, true);
    setAlert("");
    setStatus("");
    const mine = messageItem("user", text, new Date().toISOString());
    const pending = pendingReply();
    appendMessage(mine);
    appendMessage(pending.item);
    field.value = "";
    pending.item.scrollIntoView({ block: "nearest" });
    const controller = new AbortController();
    turn = controller;
    let ended;
    turnEnded = new Promise((resolve) => (ended = resolve));
    $("stop-button").hidden = false;
    let answered = false;
    try {
      const answer = await streamTurn(text, { signal: controller.signal, onProgress: pending.progress, onText: pending.text });
      answered = true;
      const reply = replyItem({ ...answer, text: answer.reply, timestamp: new Date().toISOString() });
      pending.item.replaceWith(reply);
      announceReply(reply);
      renderModel(answer.model);
      turn = null;
      $("stop-button").hidden = true;
      await refreshMetadata();
      await refreshPlan();
    } catch (error) {
      if (!answered) {
        removeMessage(pending.item);
        removeMessage(mine);
        if (field.value === "") field.value = text; // nothing was stored: the message is back in the box
      }
      if (controller.signal.aborted) {
        setStatus(strings.stopped);
        field.focus(); // the Stop button goes: focus to the message, back in its box
      } else failed(error);
    } finally {
      turn = null;
      $("stop-button").hidden = true;
      busy(button, false);
      ended();
    }
  }

  /** Stop: hangs up on the turn (the server stops the model and stores nothing of it). */
  function stopTurn() {
    if (turn !== null) turn.abort();
  }

  /** Where the Clipboard API is missing (a page served over plain HTTP, not from localhost). */
  function copyBySelection(text) {
    const area = element("textarea", "offscreen");
    area.value = text;
    area.readOnly = true;
    document.body.append(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
    area.remove();
    return copied;
  }

  async function copyText(text, { status = true } = {}) {
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (error) {
      copied = copyBySelection(text);
    }
    if (status) setStatus(copied ? strings.copied : strings.copy_failed);
    return copied;
  }

  /**
   * A Copy button for a reply or the plan, with its confirmation beside it: seen there, where the
   * person looks, and said politely (a status region made with the button, so that it is in the
   * page before anything is said in it).
   */
  function copyButton(label, text) {
    const wrapper = element("p", "copy");
    const button = element("button", "copy-button", label);
    button.type = "button";
    const confirmation = element("span", "copied");
    confirmation.setAttribute("role", "status");
    let clear = null;
    button.addEventListener("click", async () => {
      const copied = await copyText(text, { status: false });
      confirmation.textContent = copied ? strings.copied : strings.copy_text_failed;
      clearTimeout(clear);
      clear = setTimeout(() => {
        confirmation.textContent = "";
      }, 4000);
    });
    wrapper.append(button, " ", confirmation);
    return wrapper;
  }

  async function copyKey() {
    if (current !== null && (await copyText(sessionKey(current)))) keyKept();
  }

  // --- keeping the key ----------------------------------------------------------------

  /** Where the browser offers the Credential Management API's password credentials (Chromium, on HTTPS or localhost). */
  function canStoreCredentials() {
    return "PasswordCredential" in window && !!(navigator.credentials && navigator.credentials.store);
  }

  /** A panel's form (an id as the username, the secret as the password) to the password manager; true once taken. */
  async function storeInPasswordManager(form) {
    try {
      await navigator.credentials.store(new PasswordCredential(form));
      setStatus(strings.key_stored);
      return true;
    } catch (error) {
      setStatus(strings.key_store_failed);
      return false;
    }
  }

  async function storeKey() {
    if (await storeInPasswordManager($("key-form"))) keyKept();
  }

  /** A secret as a small text file (what it is, then the secret), made in the tab: nothing is asked of the server. */
  function downloadSecret(fileName, explanation, secret) {
    const address = location.origin + location.pathname;
    const text = `${fmt(explanation, { address })}\n\n${secret}\n`;
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
    const link = element("a");
    link.href = url;
    link.download = fileName;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    setStatus(fmt(strings.exported, { filename: fileName }));
  }

  function downloadKey() {
    if (current === null) return;
    downloadSecret(config.keyFileName, strings.key_file, sessionKey(current));
    keyKept();
  }

  const UNSAVED = `${config.storageKey}.unsaved`;

  function keyKept() {
    keyUnsaved = false;
    try {
      sessionStorage.removeItem(UNSAVED);
    } catch (error) {
      // nothing to remove
    }
  }

  /** Before a tab whose new key is in no safe place yet closes, the browser asks (its own words). */
  function warnBeforeLosingKey(event) {
    if (!keyUnsaved || switchingLanguage) return;
    event.preventDefault();
    event.returnValue = ""; // browsers before the standard's preventDefault
  }

  function showKey(session) {
    $("key-value").textContent = sessionKey(session);
    $("key-username").value = session.id;
    $("key-password").value = sessionKey(session);
    keyUnsaved = true;
    try {
      sessionStorage.setItem(UNSAVED, "1"); // the tab's question outlives a reload, as the key does
    } catch (error) {
      // storage refused: the question lasts until a reload
    }
  }

  function hideKey() {
    $("key-value").textContent = "";
    $("key-username").value = "";
    $("key-password").value = "";
  }

  function fileName(response) {
    const disposition = response.headers.get("Content-Disposition") || "";
    const match = /filename="([^"]+)"/.exec(disposition);
    return match ? match[1] : `resume-session-${new Date().toISOString().slice(0, 10)}.json`;
  }

  async function exportSession() {
    const button = $("export");
    busy(button, true);
    setAlert("");
    setStatus(strings.exporting);
    try {
      const response = await callSession("GET", "/export");
      const name = fileName(response);
      const url = URL.createObjectURL(await response.blob());
      const link = element("a");
      link.href = url;
      link.download = name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      setStatus(fmt(strings.exported, { filename: name }));
    } catch (error) {
      failed(error);
    } finally {
      busy(button, false);
    }
  }

  const encoder = new TextEncoder();

  function hex(buffer) {
    return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  /**
   * The receipt lookup of a session (sessions_app/deletion_log/formats/lookup.py): HMAC-SHA256, keyed by the
   * owner id its token gives ("anon-" + 32 hex digits of SHA-256(token)), of the domain prefix and
   * the session id. Computed in the tab: nothing is sent to compute it. Null where WebCrypto is
   * missing (a page served over plain HTTP, not from localhost).
   */
  async function receiptLookup(session) {
    const subtle = window.crypto && window.crypto.subtle;
    if (!subtle) return null;
    const tokenHash = hex(await subtle.digest("SHA-256", encoder.encode(session.token)));
    const ownerId = config.ownerIdPrefix + tokenHash.slice(0, 32);
    const key = await subtle.importKey("raw", encoder.encode(ownerId), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    return hex(await subtle.sign("HMAC", key, encoder.encode(config.receiptLookupDomain + session.id)));
  }

  /**
   * Fetches the erasure's receipt at receiptUrl (/deletions/<lookup>) and offers it for download;
   * resolves with the answer's status (0: the server could not be reached).
   */
  async function offerReceipt(receiptUrl) {
    $("receipt").hidden = true;
    let response;
    try {
      response = await fetch(receiptUrl, { headers: { Accept: "text/plain" }, credentials: "omit", cache: "no-store" });
    } catch (error) {
      return 0;
    }
    if (!response.ok) return response.status;
    const lookup = receiptUrl.split("/").pop();
    const name = `deletion-receipt-${lookup.slice(0, 12)}.txt`;
    const link = $("receipt-download");
    if (link.href.startsWith("blob:")) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([await response.text()], { type: "text/plain" }));
    link.download = name;
    $("receipt-lookup").textContent = lookup;
    $("receipt-file").textContent = name;
    $("receipt").hidden = false;
    return response.status;
  }

  /** "Look for its deletion receipt": the receipt of the pasted key's session, if it was erased. */
  async function findReceipt() {
    const button = $("find-receipt");
    busy(button, true);
    setAlert("");
    setStatus(strings.receipt_searching);
    try {
      const session = parseKey($("open-key").value);
      const lookup = session.id && session.token ? await receiptLookup(session) : "";
      if (lookup === null) {
        setStatus("");
        setAlert(strings.receipt_needs_secure_page);
        return;
      }
      const found = lookup ? await offerReceipt(config.receiptUrl.replace("LOOKUP", lookup)) : 404;
      setStatus("");
      if (found === 200) {
        $("open-key").value = "";
        show("deleted-view");
        $("deleted-heading").focus();
      } else {
        setAlert(found === 0 ? strings.network_error : strings.receipt_not_found);
      }
    } catch (error) {
      setStatus("");
      setAlert(strings.receipt_not_found);
    } finally {
      busy(button, false);
    }
  }

  /** The tab forgets an erased session and what it showed of it. */
  function forgetErased() {
    forget();
    $("conversation").replaceChildren();
    $("plan-current").replaceChildren();
    $("plan-versions").replaceChildren();
    renderFlags([]);
    renderDocument(null);
  }

  async function deleteSession() {
    // A reply still being written is hung up first (the server stores nothing of it), and its end
    // awaited: otherwise it meets the erased session and says "not found" over the receipt.
    if (turn !== null) {
      turn.abort();
      await turnEnded;
    }
    setAlert("");
    setStatus(strings.deleting);
    try {
      const response = await callSession("DELETE");
      const receiptUrl = response.headers.get("Deletion-Receipt");
      forgetErased();
      setStatus("");
      show("deleted-view");
      $("deleted-heading").focus();
      if (receiptUrl && (await offerReceipt(receiptUrl)) !== 200) {
        setStatus(fmt(strings.no_receipt, { url: new URL(receiptUrl, location.href).href }));
      }
    } catch (error) {
      failed(error);
    }
  }

  function closeSession() {
    forget();
    renderDocument(null);
    setAlert("");
    show("start-view");
    setStatus(strings.closed);
  }

  function updateResumeCount() {
    $("resume-count").textContent = fmt(strings.chars, {
      count: numberFormat.format(characterCount($("resume-text").value)),
      max: numberFormat.format(config.resumeMaxChars),
    });
  }

  // --- the optional account (docs/ACCOUNTS.md) ----------------------------------------
  //
  // An account is a passkey. Each kept session's token is wrapped here, in WebCrypto, before it
  // is sent: under a key derived (HKDF-SHA256, a random salt for each wrapping) from the passkey's
  // PRF output, and under one derived from the recovery code when this tab has it; AES-256-GCM,
  // the 12-byte nonce first. The server stores only those wrapped bytes. What this tab holds
  // (the account's token, the PRF output and the code, each as a non-extractable CryptoKey) lives
  // in memory only: nothing of the account goes to sessionStorage, localStorage or a cookie, and
  // a reload signs out.

  const accountConfig = config.account;
  let account = null; // {token, credentialId, prfKey, recoveryKey, kept: Set of session ids}
  let recoveryCodeShown = null; // the code in the recovery panel, until "I have saved it"

  function bytes(text) {
    return encoder.encode(text);
  }

  function base64url(buffer) {
    const binary = String.fromCharCode(...new Uint8Array(buffer));
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function fromBase64url(text) {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  }

  /** Key material (a PRF output, a recovery code's bytes) as an HKDF key that cannot be read back. */
  function hkdfKey(material) {
    return crypto.subtle.importKey("raw", material, "HKDF", false, ["deriveKey", "deriveBits"]);
  }

  function wrappingKey(base, salt) {
    const params = { name: "HKDF", hash: "SHA-256", salt, info: bytes(accountConfig.wrapInfo) };
    return crypto.subtle.deriveKey(params, base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
  }

  async function wrapToken(base, credentialId, token) {
    const salt = crypto.getRandomValues(new Uint8Array(32));
    const nonce = crypto.getRandomValues(new Uint8Array(12));
    const key = await wrappingKey(base, salt);
    const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, bytes(token)));
    const wrapped = new Uint8Array(nonce.length + sealed.length);
    wrapped.set(nonce);
    wrapped.set(sealed, nonce.length);
    return { credential_id: credentialId, salt: base64url(salt), wrapped: base64url(wrapped) };
  }

  /** The token, or null where this key does not open the wrapping (AES-GCM's tag refuses it). */
  async function unwrapToken(base, wrapping) {
    try {
      const wrapped = fromBase64url(wrapping.wrapped);
      const key = await wrappingKey(base, fromBase64url(wrapping.salt));
      const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv: wrapped.slice(0, 12) }, key, wrapped.slice(12));
      return new TextDecoder().decode(opened);
    } catch (error) {
      return null;
    }
  }

  /** 160 random bits as 40 hex digits, shown in groups of four; typed back in any case, with or without dashes. */
  function newRecoveryCode() {
    return hex(crypto.getRandomValues(new Uint8Array(20)));
  }

  function normalRecoveryCode(text) {
    return text.toLowerCase().replace(/[^0-9a-f]/g, "");
  }

  function shownRecoveryCode(code) {
    return code.match(/.{1,4}/g).join("-");
  }

  /** The value the server checks a recovery sign-in with: HKDF of the code (never the code itself). */
  async function recoveryVerifier(base) {
    const params = { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: bytes(accountConfig.recoveryVerifierInfo) };
    return base64url(await crypto.subtle.deriveBits(params, base, 256));
  }

  function accountUrl(suffix) {
    return `${accountConfig.url}${suffix || ""}`;
  }

  function callAccount(method, suffix, body, extra = {}) {
    return request(method, accountUrl(suffix), { accountToken: account.token, body, ...extra });
  }

  function hasPasskeys() {
    return !!(window.PublicKeyCredential && PublicKeyCredential.parseCreationOptionsFromJSON && navigator.credentials);
  }

  /** The ceremony's options with the PRF extension asked for (the first input: the fixed PRF input). */
  function withPrf(publicKey) {
    publicKey.extensions = { ...(publicKey.extensions || {}), prf: { eval: { first: bytes(accountConfig.prfInput) } } };
    return publicKey;
  }

  /** The PRF output, as an HKDF key, when the passkey gave one; null where it did not (no PRF here). */
  async function prfKeyOf(credential) {
    const results = credential.getClientExtensionResults().prf;
    const first = results && results.results && results.results.first;
    return first ? hkdfKey(first) : null;
  }

  /** What goes to the server: the response, without the extension results (the PRF output never leaves the tab). */
  function credentialJson(credential) {
    return { ...credential.toJSON(), clientExtensionResults: {} };
  }

  function passkeyFailed(error) {
    setStatus("");
    if (error instanceof ApiError) setAlert(error.message);
    else setAlert(error && error.name === "NotAllowedError" ? strings.account_passkey_cancelled : strings.account_passkey_failed);
  }

  async function signedIn(response, fields) {
    const body = await response.json();
    account = { token: body.account_token, credentialId: null, prfKey: null, recoveryKey: null, kept: new Set(), ...fields };
    await refreshAccount();
    $("account-heading").focus();
  }

  /** Runs `action` with `button` disabled and the alert cleared; what it throws goes to `onError`. */
  async function withButton(button, action, onError) {
    busy(button, true);
    setAlert("");
    try {
      await action();
    } catch (error) {
      onError(error);
    } finally {
      busy(button, false);
    }
  }

  function accountFailed(error) {
    setStatus("");
    setAlert(error instanceof ApiError ? error.message : strings.network_error);
  }

  function registerAccount() {
    setStatus(strings.account_waiting_passkey);
    return withButton($("account-register"), async () => {
      const options = (await (await request("POST", accountUrl("/registration/options"), { body: {} })).json()).options;
      const publicKey = withPrf(PublicKeyCredential.parseCreationOptionsFromJSON(options));
      const credential = await navigator.credentials.create({ publicKey });
      const code = newRecoveryCode();
      const recoveryKey = await hkdfKey(bytes(code));
      const body = { credential: credentialJson(credential), recovery_verifier: await recoveryVerifier(recoveryKey) };
      const response = await request("POST", accountUrl("/registration"), { body });
      recoveryCodeShown = code;
      await signedIn(response, { credentialId: credential.id, prfKey: await prfKeyOf(credential), recoveryKey });
      showRecoveryCode(options.user.name, code);
      setStatus(strings.account_created);
    }, passkeyFailed);
  }

  function signInWithPasskey() {
    setStatus(strings.account_waiting_passkey);
    return withButton($("account-sign-in"), async () => {
      const options = (await (await request("POST", accountUrl("/sign-in/options"), { body: {} })).json()).options;
      const publicKey = withPrf(PublicKeyCredential.parseRequestOptionsFromJSON(options));
      const credential = await navigator.credentials.get({ publicKey });
      const response = await request("POST", accountUrl("/sign-in"), { body: { credential: credentialJson(credential) } });
      await signedIn(response, { credentialId: credential.id, prfKey: await prfKeyOf(credential) });
      setStatus(strings.account_signed_in);
    }, passkeyFailed);
  }

  /** Signs in with the code (the server checks a value derived from it); the tab keeps it to open sessions. */
  function signInWithRecoveryCode(event) {
    event.preventDefault();
    return withButton($("recovery-button"), async () => {
      const recoveryKey = await hkdfKey(bytes(normalRecoveryCode($("recovery-code").value)));
      const body = { recovery_verifier: await recoveryVerifier(recoveryKey) };
      const response = await request("POST", accountUrl("/recovery-sign-in"), { body });
      const passkey = account ? { credentialId: account.credentialId, prfKey: account.prfKey } : {};
      $("recovery-code").value = "";
      await signedIn(response, { ...passkey, recoveryKey });
      setStatus(strings.account_signed_in);
    }, accountFailed);
  }

  function showRecoveryCode(accountName, code) {
    $("code-value").textContent = shownRecoveryCode(code);
    $("code-username").value = accountName;
    $("code-password").value = shownRecoveryCode(code);
    $("recovery-panel").hidden = false;
  }

  function hideRecoveryCode() {
    recoveryCodeShown = null;
    $("code-value").textContent = "";
    $("code-username").value = "";
    $("code-password").value = "";
    $("recovery-panel").hidden = true;
  }

  function keptSessionItem(kept) {
    const item = element("li", "account-session");
    const line = element("p", "", "");
    line.append(
      fmt(strings.account_session_line, { turns: numberFormat.format(kept.turns) }),
      " ",
      fmt(strings.account_session_started, { time: formatTime(kept.created_at) }),
      " ",
      fmt(strings.account_session_active, { time: formatTime(kept.last_activity_at) }),
      " ",
      fmt(strings.account_session_expires, { time: formatTime(kept.expires_at) }),
    );
    const open = element("button", "", strings.account_open);
    open.type = "button";
    open.addEventListener("click", () => openKeptSession(kept.session_id, open));
    const letGo = element("button", "", strings.account_let_go);
    letGo.type = "button";
    letGo.addEventListener("click", () => letGoOfSession(kept.session_id, letGo));
    const buttons = element("p", "toolbar");
    buttons.append(open, " ", letGo);
    item.append(line, buttons);
    return item;
  }

  /** The account's part of the page, as the server lists it now. */
  async function refreshAccount() {
    const signedInNow = account !== null;
    $("account-signed-out").hidden = signedInNow;
    $("account-signed-in").hidden = !signedInNow;
    $("recovery-form").hidden = signedInNow && (account.prfKey !== null || account.recoveryKey !== null);
    if (!signedInNow) {
      $("account-sessions").replaceChildren();
      updateKeepButton();
      return;
    }
    $("account-locked").hidden = $("recovery-form").hidden; // signed in, with no key to open a session
    const listed = (await (await callAccount("GET", "/sessions")).json()).sessions;
    account.kept = new Set(listed.map((kept) => kept.session_id));
    $("account-summary").textContent = fmt(strings.account_summary, { count: numberFormat.format(listed.length) });
    $("account-sessions").replaceChildren(...listed.map(keptSessionItem));
    $("account-sessions-empty").hidden = listed.length > 0;
    updateKeepButton();
  }

  function updateKeepButton() {
    $("account-keep").hidden = account === null || current === null || account.kept.has(current.id);
  }

  /** The open session into the account: its token wrapped here for this passkey and for the code, as this tab has them. */
  function keepCurrentSession() {
    return withButton($("account-keep"), async () => {
      const session = current;
      const wrappings = [];
      if (account.prfKey) wrappings.push(await wrapToken(account.prfKey, account.credentialId, session.token));
      if (account.recoveryKey) wrappings.push(await wrapToken(account.recoveryKey, null, session.token));
      if (wrappings.length === 0) {
        setAlert(strings.account_no_key);
        return;
      }
      await callAccount("POST", "/sessions", { session_id: session.id, wrapped_tokens: wrappings }, { token: session.token });
      keyKept(); // the account holds the key now
      await refreshAccount();
      setStatus(strings.account_kept);
    }, failed);
  }

  /** A kept session's token, unwrapped here from its envelope with this passkey's PRF output or the code, then opened as today. */
  function openKeptSession(sessionId, button) {
    return withButton(button, async () => {
      const envelope = await (await callAccount("GET", `/sessions/${encodeURIComponent(sessionId)}`)).json();
      let token = null;
      for (const wrapping of envelope.wrapped_tokens) {
        const base = wrapping.credential_id === null ? account.recoveryKey : account.prfKey;
        if (token === null && base && (wrapping.credential_id === null || wrapping.credential_id === account.credentialId)) {
          token = await unwrapToken(base, wrapping);
        }
      }
      if (token === null) {
        $("recovery-form").hidden = false; // the code opens it (kept from a device whose passkey gave no PRF)
        setAlert(strings.account_cannot_open);
        return;
      }
      const forThisPasskey = envelope.wrapped_tokens.some((wrapping) => wrapping.credential_id === account.credentialId);
      if (account.prfKey && !forThisPasskey) {
        // Opened with the code by a passkey that has PRF: wrapped for it too, so that it alone opens it next time.
        const wrappings = [await wrapToken(account.prfKey, account.credentialId, token)];
        await callAccount("POST", "/sessions", { session_id: sessionId, wrapped_tokens: wrappings }, { token });
      }
      keyKept();
      await openSession({ id: sessionId, token });
      $("session-heading").focus();
    }, (error) => {
      failed(error);
      refreshAccount().catch(() => {});
    });
  }

  function letGoOfSession(sessionId, button) {
    return withButton(button, async () => {
      await callAccount("DELETE", `/sessions/${encodeURIComponent(sessionId)}`);
      await refreshAccount();
      setStatus(strings.account_let_go_done);
    }, (error) => setAlert(error.message));
  }

  function signedOut() {
    account = null;
    hideRecoveryCode();
    refreshAccount();
  }

  async function signOut() {
    setAlert("");
    try {
      await callAccount("POST", "/sign-out", {});
    } catch (error) {
      // The sign-in ends here either way; the server's ends by itself.
    }
    signedOut();
    setStatus(strings.account_signed_out);
  }

  /** Deletes the account: every session it keeps is erased on the server through the one erasure, then its passkeys. */
  async function deleteAccount() {
    setAlert("");
    setStatus(strings.deleting);
    try {
      const erased = await (await callAccount("DELETE")).json();
      if (current !== null && erased.session_ids.includes(current.id)) {
        forgetErased();
        show("start-view");
      }
      signedOut();
      setStatus(
        fmt(strings.account_deleted, {
          sessions: numberFormat.format(erased.sessions_erased),
          passkeys: numberFormat.format(erased.passkeys_erased),
        }),
      );
      $("account-heading").focus();
    } catch (error) {
      accountFailed(error);
    }
  }

  // --- the phone's tabs: conversation and plan ---------------------------------------

  const phone = window.matchMedia("(max-width: 699.98px)");
  const tabs = ["conversation", "plan"];

  /** Shows one panel (below 700 px; wider, the CSS shows both): the tab selected, the other panel hidden. */
  function selectTab(name, { focus = false } = {}) {
    for (const other of tabs) {
      const tab = $(`tab-${other}`);
      const selected = other === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      $(`panel-${other}`).classList.toggle("tab-inactive", !selected);
    }
    if (focus) $(`tab-${name}`).focus();
    if (name === "plan") markPlanTab(false);
  }

  function tabSelected(name) {
    return $(`tab-${name}`).getAttribute("aria-selected") === "true";
  }

  /** The plan tab's change marker: a dot (page.css) and, for screen readers, its description. */
  function markPlanTab(changed) {
    $("tab-plan").classList.toggle("updated", changed);
    if (changed) $("tab-plan").setAttribute("aria-describedby", "plan-tab-updated");
    else $("tab-plan").removeAttribute("aria-describedby");
  }

  /** The panels are tab panels only while the tabs are shown: a wide screen reads two sections. */
  function panelRoles() {
    for (const name of tabs) {
      const panel = $(`panel-${name}`);
      if (phone.matches) {
        panel.setAttribute("role", "tabpanel");
        panel.setAttribute("aria-labelledby", `tab-${name}`);
      } else {
        panel.removeAttribute("role");
        panel.setAttribute("aria-labelledby", `${name}-heading`);
      }
    }
  }

  /** The tab list's keys (WAI-ARIA tabs, selection follows focus): arrows, Home and End. */
  function tabKeys(event) {
    const index = tabs.findIndex((name) => $(`tab-${name}`) === event.target);
    if (index < 0) return;
    const next = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    selectTab(tabs[(next + tabs.length) % tabs.length], { focus: true });
  }

  // --- wiring ----------------------------------------------------------------------

  $("start-form").addEventListener("submit", startSession);
  $("resume-file").addEventListener("change", () => chooseFile($("resume-file").files[0]));
  $("file-drop").addEventListener("dragover", (event) => {
    event.preventDefault(); // this box takes a drop
    $("file-drop").classList.add("dropping");
  });
  $("file-drop").addEventListener("dragleave", () => $("file-drop").classList.remove("dropping"));
  $("file-drop").addEventListener("drop", (event) => {
    event.preventDefault(); // the browser would open the file instead
    $("file-drop").classList.remove("dropping");
    if (event.dataTransfer.files.length) chooseFile(event.dataTransfer.files[0]);
  });
  $("open-form").addEventListener("submit", openFromKey);
  $("stop-button").addEventListener("click", stopTurn);
  // After each reply (or failure) the message box has the focus again, ready for the next message.
  $("message-form").addEventListener("submit", async (event) => {
    await sendMessage(event);
    $("message-text").focus();
  });
  // Enter sends, Shift+Enter is a newline; never while an input method composes (Chinese input
  // confirms its characters with Enter: isComposing, and keyCode 229 in browsers that end it first).
  $("message-text").addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    if (!$("send-button").disabled) $("message-form").requestSubmit();
  });
  $("find-receipt").addEventListener("click", findReceipt);
  $("resume-text").addEventListener("input", updateResumeCount);
  $("key-form").addEventListener("submit", (event) => event.preventDefault()); // never sent anywhere
  $("key-copy").addEventListener("click", copyKey);
  $("key-store").hidden = !canStoreCredentials();
  $("key-store").addEventListener("click", storeKey);
  $("key-download").addEventListener("click", downloadKey);
  window.addEventListener("beforeunload", warnBeforeLosingKey);
  $("language-form").addEventListener("submit", () => {
    switchingLanguage = true;
  });
  $("key-done").addEventListener("click", () => {
    hideKey(); // the panel goes; "Copy session key" stays
    show("session-view");
    $("session-heading").focus();
  });
  $("copy-key").addEventListener("click", copyKey);
  $("export").addEventListener("click", exportSession);
  $("delete").addEventListener("click", () => {
    $("delete-dialog").returnValue = "";
    $("delete-dialog").showModal();
  });
  $("delete-dialog").addEventListener("close", () => {
    if ($("delete-dialog").returnValue === "delete") deleteSession();
  });
  $("close").addEventListener("click", closeSession);
  $("start-again").addEventListener("click", () => {
    show("start-view");
    $("resume-text").focus();
  });

  $("account-register").addEventListener("click", registerAccount);
  $("account-sign-in").addEventListener("click", signInWithPasskey);
  $("account-register").disabled = !hasPasskeys();
  $("account-sign-in").disabled = !hasPasskeys();
  $("account-no-passkeys").hidden = hasPasskeys();
  $("recovery-form").addEventListener("submit", signInWithRecoveryCode);
  $("account-keep").addEventListener("click", keepCurrentSession);
  $("account-sign-out").addEventListener("click", signOut);
  $("code-form").addEventListener("submit", (event) => event.preventDefault()); // never sent anywhere
  $("code-copy").addEventListener("click", () => recoveryCodeShown && copyText(shownRecoveryCode(recoveryCodeShown)));
  $("code-store").hidden = !canStoreCredentials();
  $("code-store").addEventListener("click", () => storeInPasswordManager($("code-form")));
  $("code-download").addEventListener("click", () => {
    if (recoveryCodeShown) downloadSecret(config.account.codeFileName, strings.account_code_file, shownRecoveryCode(recoveryCodeShown));
  });
  $("recovery-done").addEventListener("click", () => {
    hideRecoveryCode();
    $("account-heading").focus();
  });
  $("account-delete").addEventListener("click", () => {
    $("account-delete-dialog").returnValue = "";
    $("account-delete-dialog").showModal();
  });
  $("account-delete-dialog").addEventListener("close", () => {
    if ($("account-delete-dialog").returnValue === "delete") deleteAccount();
  });

  for (const name of tabs) $(`tab-${name}`).addEventListener("click", () => selectTab(name));
  $("panel-tabs").addEventListener("keydown", tabKeys);
  phone.addEventListener("change", panelRoles);
  panelRoles();

  updateResumeCount();
  const saved = remembered();
  if (saved) {
    try {
      keyUnsaved = sessionStorage.getItem(UNSAVED) === "1";
    } catch (error) {
      keyUnsaved = false;
    }
    openSession(saved).catch(failed);
  }
})();
