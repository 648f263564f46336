// The marimo view of streamwidgets (widgets/_marimo.py): it places HTML that Python rendered and
// sanitized, and sends clicks back. It never parses markdown.
//
// State: the `snapshot` trait (everything at sequence number `seq`); frames: custom messages
// {seq, order?, panes?, md?, said?}, or {seq} whose one buffer packs the rest (JSON compressed with
// raw deflate, as the snapshot is). A frame
// applies only on top of the one before it; a gap (a page that attached late or reconnected) asks
// Python for the snapshot and waits for it. Unpacking is asynchronous: frames and snapshots are
// taken in turn, in the order they arrived.
// SHEET, the view's stylesheet, is appended to this module by widgets/_marimo.py.

const DARK = () =>
  document.documentElement.classList.contains("dark") ||
  document.body.classList.contains("dark") ||
  document.documentElement.dataset.theme === "dark" ||
  document.body.classList.contains("dark-theme");

function render({ model, el }) {
  const host = document.createElement("div");
  const style = document.createElement("style");
  const view = document.createElement("div");
  const row = document.createElement("div");
  const said = document.createElement("div");
  style.textContent = SHEET + "\n" + model.get("css");
  view.className = model.get("classes").join(" ");
  row.className = "sw-header-row";
  said.className = "sw-announce";
  said.innerHTML = '<div class="sw-said" role="status" aria-live="polite" aria-atomic="true"></div>';
  view.append(row);
  host.append(style, view);
  el.append(host);

  const slots = new Map();
  let seq = -1;
  let asked = false;

  const slot = (name) => {
    let box = slots.get(name);
    if (!box) {
      box = document.createElement("div");
      box.className = "sw-pane";
      box.dataset.swPane = name;
      slots.set(name, box);
    }
    return box;
  };

  const apply = (frame) => {
    if (frame.order) {
      for (const [name, place] of frame.order) {
        const box = slot(name);
        if (place === "row") {
          row.append(box);
          if (name === "header") row.append(said);
        } else {
          view.append(box);
        }
      }
    }
    for (const [name, html] of Object.entries(frame.panes || {})) {
      const box = slot(name);
      const kept = new Map();
      for (const md of box.querySelectorAll("[data-sw-md]")) kept.set(md.dataset.swMd, md);
      box.innerHTML = html;
      for (const md of box.querySelectorAll("[data-sw-md]")) {
        const old = kept.get(md.dataset.swMd);
        if (old) md.replaceChildren(...old.childNodes);
      }
    }
    for (const [name, [start, segments]] of Object.entries(frame.md || {})) {
      const md = view.querySelector(`[data-sw-md="${name}"]`);
      if (!md) continue;
      while (md.children.length > start) md.lastElementChild.remove();
      for (const html of segments) {
        const seg = document.createElement("div");
        seg.className = "sw-seg";
        seg.innerHTML = html;
        md.append(seg);
      }
    }
    if (typeof frame.said === "string") said.firstChild.textContent = frame.said;
  };

  const unpack = async (value) => {
    if (!value) return null;
    const bytes = ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : value;
    if (!bytes.byteLength) return null;
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return JSON.parse(await new Response(stream).text());
  };

  let turn = Promise.resolve();
  const inTurn = (task) => {
    turn = turn.then(task).catch((error) => console.error("streamwidgets:", error));
  };

  const fromSnapshot = () =>
    inTurn(async () => {
      const snapshot = await unpack(model.get("snapshot"));
      // One the page already shows (the final frame and the end's snapshot) is not drawn again.
      if (snapshot && typeof snapshot.seq === "number" && snapshot.seq > seq) {
        for (const box of slots.values()) box.replaceChildren();
        for (const md of view.querySelectorAll("[data-sw-md]")) md.replaceChildren();
        apply(snapshot);
        seq = snapshot.seq;
        asked = false;
      }
    });

  const onFrame = (content, buffers) =>
    inTurn(async () => {
      if (!content || typeof content.seq !== "number" || content.seq <= seq) return;
      if (content.seq !== seq + 1) {
        if (!asked) {
          asked = true;
          model.send({ event: "resync" });
        }
        return;
      }
      apply(buffers && buffers.length ? await unpack(buffers[0]) : content);
      seq = content.seq;
    });

  const onClick = (event) => {
    const button = event.target.closest("[data-sw-act]");
    if (!button || button.disabled) return;
    const ask = button.dataset.swAsk;
    model.send({ event: button.dataset.swAct, ask: ask === undefined ? null : Number(ask) });
  };

  const theme = () => host.classList.toggle("sw-dark", DARK());
  const watcher = new MutationObserver(theme);
  watcher.observe(document.documentElement, { attributes: true, attributeFilter: ["class", "data-theme"] });
  watcher.observe(document.body, { attributes: true, attributeFilter: ["class"] });
  theme();

  view.addEventListener("click", onClick);
  model.on("msg:custom", onFrame);
  model.on("change:snapshot", fromSnapshot);
  fromSnapshot();
  return () => {
    watcher.disconnect();
    model.off("msg:custom", onFrame);
    model.off("change:snapshot", fromSnapshot);
  };
}

export default { render };
