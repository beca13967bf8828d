import { describe, expect, it } from 'vitest'
import {
  DEFAULT_PLATFORM,
  isSelectable,
  PLATFORMS,
  setupCommands,
  unavailableLabel,
} from './platforms.ts'

describe('platforms', () => {
  it('preselects an Available platform', () => {
    const preselected = PLATFORMS.find((p) => p.id === DEFAULT_PLATFORM)
    expect(preselected && isSelectable(preselected)).toBe(true)
  })
  it('labels cards that are not available yet', () => {
    expect(unavailableLabel('Coming Soon')).toBe('Available Soon')
    expect(unavailableLabel('Planned')).toBe('In Development')
    expect(unavailableLabel('Available')).toBeNull()
    expect(PLATFORMS.filter((p) => !isSelectable(p)).every((p) => unavailableLabel(p.status))).toBe(
      true,
    )
  })
  it('points login at the given origin', () => {
    expect(setupCommands('https://mesh.example')).toEqual({
      install: 'npm install -g https://mesh.example/downloads/meshwork-node.tgz',
      login: 'meshwork-node login --server https://mesh.example',
      start: 'meshwork-node start',
    })
  })
})
