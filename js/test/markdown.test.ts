import { sanitizeSuite } from "./sanitize-cases";

sanitizeSuite("happy-dom", false);
