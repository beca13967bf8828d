import { cleanup, fireEvent, render } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { useAutoScroll } from './use-auto-scroll.ts'

let api: ReturnType<typeof useAutoScroll<HTMLDivElement, HTMLDivElement>>

function Harness() {
  api = useAutoScroll<HTMLDivElement, HTMLDivElement>('k')
  return (
    <div ref={api.containerRef} data-testid="box" tabIndex={0}>
      <div ref={api.contentRef} />
    </div>
  )
}

function geometry(el: HTMLElement, scrollTop: number) {
  Object.defineProperty(el, 'scrollHeight', { value: 2000, configurable: true })
  Object.defineProperty(el, 'clientHeight', { value: 500, configurable: true })
  el.scrollTop = scrollTop
}

describe('useAutoScroll', () => {
  afterEach(cleanup)

  it('stops following after a wheel scroll more than 100 px from the bottom', () => {
    const { getByTestId } = render(<Harness />)
    const box = getByTestId('box')
    geometry(box, 1300) // 200 px from the bottom
    fireEvent.wheel(box)
    fireEvent.scroll(box)
    expect(api.following.current).toBe(false)
  })

  it('keeps following within 100 px, and ignores scrolls it did not see the user make', () => {
    const { getByTestId } = render(<Harness />)
    const box = getByTestId('box')
    geometry(box, 1420) // 80 px from the bottom
    fireEvent.keyDown(box, { key: 'PageUp' })
    fireEvent.scroll(box)
    expect(api.following.current).toBe(true)
    geometry(box, 0)
    fireEvent.scroll(box) // programmatic: no wheel, touch or key before it
    expect(api.following.current).toBe(true)
  })

  it('turns following back on when follow() is called (send, conversation change)', () => {
    const { getByTestId } = render(<Harness />)
    const box = getByTestId('box')
    geometry(box, 0)
    fireEvent.touchMove(box)
    fireEvent.scroll(box)
    expect(api.following.current).toBe(false)
    api.follow()
    expect(api.following.current).toBe(true)
  })

  it('counts dragging the scroll bar as a manual scroll', () => {
    const { getByTestId } = render(<Harness />)
    const box = getByTestId('box')
    geometry(box, 300)
    fireEvent.pointerDown(box)
    fireEvent.scroll(box)
    fireEvent.scroll(box)
    expect(api.following.current).toBe(false)
    fireEvent.pointerUp(window)
    geometry(box, 1500)
    fireEvent.scroll(box) // not the user's: the mode stays as it was
    expect(api.following.current).toBe(false)
  })
})
