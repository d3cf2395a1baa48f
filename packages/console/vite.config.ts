import { browserAppConfig } from "@affiliate/browser-kit/vite-config";
import { defineConfig } from "vite";

export default defineConfig(browserAppConfig("/console/"));
