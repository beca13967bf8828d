/**
 * @module The Recharts charts of Network Status. Loaded lazily (React.lazy) so that Recharts
 * stays out of every bundle but this one.
 */
import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import { useEffect, useState } from 'react'
import { useTheme } from '../../../context/theme-context.tsx'
import { axisTicks, type JobPoint, type RequestPoint } from '../network-metrics.ts'

export type MetricsTab = 'requests' | 'performance' | 'jobs'

export interface NetworkChartsProps {
  tab: MetricsTab
  requests: RequestPoint[]
  jobs: JobPoint[]
}

const PHONE = '(max-width: 639px)'

/** Hours between two axis labels: 3 where there is room, 6 on a phone. */
function useTickStep(): number {
  const phoneQuery = () =>
    typeof window.matchMedia === 'function' ? window.matchMedia(PHONE) : null
  const [phone, setPhone] = useState(() => phoneQuery()?.matches ?? false)
  useEffect(() => {
    const query = phoneQuery()
    if (!query) return
    const onChange = () => setPhone(query.matches)
    query.addEventListener('change', onChange)
    return () => query.removeEventListener('change', onChange)
  }, [])
  return phone ? 6 : 3
}

export default function NetworkCharts({ tab, requests, jobs }: NetworkChartsProps) {
  const { theme } = useTheme()
  const ticks = axisTicks(
    requests.map((p) => p.label),
    useTickStep(),
  )
  const hourAxis = { dataKey: 'label', ticks, interval: 0 as const }
  const dark = theme === 'dark'
  const axis = { stroke: dark ? '#94a3b8' : '#64748b', fontSize: 12 }
  const grid = dark ? '#1e293b' : '#e2e8f0'
  const tooltip = {
    contentStyle: {
      background: dark ? '#0f172a' : '#ffffff',
      border: `1px solid ${dark ? '#334155' : '#e2e8f0'}`,
      borderRadius: 8,
      color: dark ? '#f1f5f9' : '#0f172a',
    },
    cursor: { fill: dark ? 'rgba(148,163,184,0.08)' : 'rgba(100,116,139,0.08)' },
  }
  return (
    <div className="h-72 w-full">
      <ResponsiveContainer width="100%" height="100%">
        {tab === 'requests' ? (
          <BarChart data={requests} margin={{ top: 8, right: 8, left: -16, bottom: 0 }}>
            <CartesianGrid strokeDasharray="3 3" stroke={grid} vertical={false} />
            <XAxis {...hourAxis} tick={axis} stroke={axis.stroke} />
            <YAxis allowDecimals={false} tick={axis} stroke={axis.stroke} />
            <Tooltip {...tooltip} />
            <Legend />
            <Bar dataKey="completed" name="Completed" stackId="r" fill="#10b981" />
            <Bar dataKey="processing" name="Processing" stackId="r" fill="#3b82f6" />
            <Bar
              dataKey="pending"
              name="Pending"
              stackId="r"
              fill="#f59e0b"
              radius={[4, 4, 0, 0]}
            />
          </BarChart>
        ) : tab === 'performance' ? (
          <LineChart data={requests} margin={{ top: 8, right: 0, left: -8, bottom: 0 }}>
            <CartesianGrid strokeDasharray="3 3" stroke={grid} vertical={false} />
            <XAxis {...hourAxis} tick={axis} stroke={axis.stroke} />
            <YAxis yAxisId="ms" tick={axis} stroke={axis.stroke} />
            <YAxis
              yAxisId="pct"
              orientation="right"
              domain={[0, 100]}
              tick={axis}
              stroke={axis.stroke}
            />
            <Tooltip {...tooltip} cursor={{ stroke: axis.stroke }} />
            <Legend />
            <Line
              yAxisId="ms"
              type="monotone"
              dataKey="avgResponseMs"
              name="Avg Response Time (ms)"
              stroke="#6366f1"
              strokeWidth={2}
              dot={{ r: 3 }}
            />
            <Line
              yAxisId="pct"
              type="monotone"
              dataKey="successRate"
              name="Success Rate (%)"
              stroke="#10b981"
              strokeWidth={2}
              dot={{ r: 3 }}
            />
          </LineChart>
        ) : (
          <BarChart data={jobs} margin={{ top: 8, right: 8, left: -16, bottom: 0 }}>
            <CartesianGrid strokeDasharray="3 3" stroke={grid} vertical={false} />
            <XAxis {...hourAxis} tick={axis} stroke={axis.stroke} />
            <YAxis allowDecimals={false} tick={axis} stroke={axis.stroke} />
            <Tooltip {...tooltip} />
            <Legend />
            <Bar dataKey="pending" name="Pending Jobs" fill="#f59e0b" radius={[4, 4, 0, 0]} />
            <Bar dataKey="acked" name="Acknowledged Jobs" fill="#6366f1" radius={[4, 4, 0, 0]} />
          </BarChart>
        )}
      </ResponsiveContainer>
    </div>
  )
}
