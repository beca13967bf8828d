/**
 * @module Runs once before the browser tests: Chromium must exist (a missing browser fails the
 * suite instead of skipping it) and the web build must be current with packages/web's sources;
 * the node agent package is packed afresh (about a second).
 */
import { existsSync } from 'node:fs'
import { CHROMIUM_PATH, MissingChromiumError } from './browser.ts'
import { buildWeb, packAgent, webDistIsStale } from './web-build.ts'

export default function setup() {
  if (!existsSync(CHROMIUM_PATH)) throw new MissingChromiumError()
  if (webDistIsStale()) buildWeb()
  packAgent()
}
