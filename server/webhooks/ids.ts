/** The engine's row ids are the platform's time-ordered ids (server/ids.ts). */
export { uuidv7, uuidv7Floor } from "../ids.ts";
