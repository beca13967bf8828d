import { cleanup, render, screen } from '@testing-library/react'
import { createMemoryRouter, RouterProvider } from 'react-router'
import { afterEach, describe, expect, it } from 'vitest'
import { ModelUnavailableBanner } from './model-unavailable-banner.tsx'

const show = (onlineNodes: number | undefined) =>
  render(
    <RouterProvider
      router={createMemoryRouter([
        { path: '/', element: <ModelUnavailableBanner model="Qwen" onlineNodes={onlineNodes} /> },
      ])}
    />,
  )

describe('ModelUnavailableBanner', () => {
  afterEach(cleanup)

  it('says no nodes are online when none is', () => {
    show(0)
    expect(screen.getByRole('alert').textContent).toContain('Model Unavailable')
    expect(screen.getByRole('alert').textContent).toContain('No nodes are online')
  })
  it('says nodes are online but none serves this model, and where to serve it', () => {
    show(2)
    const text = screen.getByRole('alert').textContent
    expect(text).toContain('2 nodes are online, but none is serving Qwen')
    expect(text).not.toContain('No nodes are online')
    expect(screen.getByRole('link', { name: 'My Nodes' }).getAttribute('href')).toBe('/nodes')
    cleanup()
    show(1)
    expect(screen.getByRole('alert').textContent).toContain(
      '1 node is online, but none is serving Qwen',
    )
  })
})
