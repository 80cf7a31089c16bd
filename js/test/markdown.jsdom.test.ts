// @vitest-environment jsdom
// The same cases in jsdom, the DOM that DOMPurify itself is tested against.
import { sanitizeSuite } from "./sanitize-cases";

sanitizeSuite("jsdom", true);
