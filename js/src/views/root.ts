// Assemble one view of a session into `el`: the transcript view, or the Studio when mode is "studio".
import { h } from "../dom";
import type { Session } from "../session";
import { statusView } from "./status";
import { studioControls } from "./studio";
import { transcriptView } from "./transcript";

export function mountView(session: Session, el: HTMLElement): () => void {
  const studio = session.mode === "studio";
  const root = h("div", { class: `anvia-root ${studio ? "anvia-studio" : "anvia-transcript-mode"}` });
  // Ours, set by code: keeps notebook keyboard shortcuts from firing while typing in the widget.
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  // The `title` trait (the agent's name), as text.
  const title = h("div", { class: "anvia-title" });
  const showTitle = (): void => {
    title.textContent = session.trait("title");
    title.hidden = !title.textContent;
  };
  showTitle();
  const status = statusView(session);
  const transcript = transcriptView(session);
  const disposers = [status.dispose, transcript.dispose, session.onTrait("title", showTitle)];
  if (studio) {
    const controls = studioControls(session);
    disposers.push(controls.dispose);
    root.append(status.banner, title, controls.header, transcript.el, controls.prompts, controls.composer, status.el, status.live);
  } else {
    root.append(status.banner, title, transcript.el, status.el, status.live);
  }
  el.appendChild(root);
  return () => {
    for (const d of disposers) d();
    root.remove();
  };
}
