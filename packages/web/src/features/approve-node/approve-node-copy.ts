/** @module Texts of the Approve Node screen (spec §2, §8). */
export const DEFAULT_DEVICE = 'Unknown Device'
export const PERMISSIONS = [
  'Process AI inference requests on your behalf',
  'Earn credits for completed work',
  'Update node status and availability',
] as const
export const MISSING_TOKEN = 'Missing authorization token'
export const APPROVE_FAILED = 'Failed to approve connection. Please try again.'
export const DENY_FAILED = 'Failed to process denial. You can close this window.'
export const DENIED = 'Connection denied. You can close this window.'
