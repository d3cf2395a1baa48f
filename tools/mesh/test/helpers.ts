export * from "../src/test-mesh.js";
