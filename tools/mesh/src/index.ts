export * from "./mesh.js";
export * from "./preflight.js";
export * from "./services.js";
