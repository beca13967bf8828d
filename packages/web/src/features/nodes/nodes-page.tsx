import { PageContainer, PageHeader } from '../../components/page-header.tsx'

// Placeholder owned by the second web engineer: replace with the full screen of spec §2.
export default function Page() {
  return (
    <PageContainer>
      <PageHeader title="My Nodes" />
    </PageContainer>
  )
}
