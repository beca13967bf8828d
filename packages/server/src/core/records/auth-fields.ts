/**
 * @module The auth collection's own create/update checks (PocketBase's form-level validation):
 * password + passwordConfirm, oldPassword to change a password, no self-verification, no e-mail
 * change through update. Form-level errors win over field errors, as in PocketBase.
 */
import type { FieldError } from '../../tools/api-error.ts'
import { randomString } from '../../tools/ids.ts'
import { isSystemEmail } from '../auth/email-identity.ts'
import { hashPassword, verifyPassword } from '../auth/passwords.ts'
import type { Row } from './serialize.ts'

export interface AuthFieldsResult {
  values: Row
  formErrors: Record<string, FieldError>
}

/** The users collection's password limit (bcrypt's, kept by PocketBase; argon2 has none). */
const PASSWORD_MAX = 71
const required: FieldError = { code: 'validation_required', message: 'Cannot be blank.' }

export async function prepareAuthCreate(
  body: Row,
  values: Row,
  superuser: boolean,
): Promise<AuthFieldsResult> {
  const formErrors: Record<string, FieldError> = {}
  const password = typeof body.password === 'string' ? body.password : ''
  const confirm = typeof body.passwordConfirm === 'string' ? body.passwordConfirm : ''
  if (!password) formErrors.password = required
  if (!confirm) formErrors.passwordConfirm = required
  else if (confirm !== password)
    formErrors.passwordConfirm = {
      code: 'validation_values_mismatch',
      message: "Values don't match.",
    }
  if (!superuser && values.verified === 1) {
    formErrors.verified = { code: 'validation_values_mismatch', message: "Values don't match." }
  }
  // The system's own accounts (the house) live at this domain; nobody may sign up as one.
  if (!superuser && typeof values.email === 'string' && isSystemEmail(values.email)) {
    formErrors.email = {
      code: 'validation_reserved_email',
      message: 'This e-mail address is reserved.',
    }
  }
  if (Object.keys(formErrors).length) return { values, formErrors }
  const lengthError = passwordLengthError(password)
  if (lengthError) return { values, formErrors: { password: lengthError } }
  // Meshwork: the name defaults to the part of the e-mail before the @.
  if (!values.name && typeof values.email === 'string') values.name = values.email.split('@')[0]
  values.password = await hashPassword(password)
  values.tokenKey = randomString(50)
  return { values, formErrors }
}

export async function prepareAuthUpdate(
  body: Row,
  values: Row,
  existing: Row,
  superuser: boolean,
): Promise<AuthFieldsResult> {
  const formErrors: Record<string, FieldError> = {}
  if (!superuser && values.verified !== undefined && values.verified !== existing.verified) {
    formErrors.verified = { code: 'validation_values_mismatch', message: "Values don't match." }
  }
  if (!superuser && values.email !== undefined && values.email !== existing.email) {
    formErrors.email = {
      code: 'validation_values_mismatch',
      message: 'Use the email change flow to change the email.',
    }
  }
  const password = typeof body.password === 'string' ? body.password : ''
  if (password) {
    if (body.passwordConfirm !== password) {
      formErrors.passwordConfirm = {
        code: 'validation_values_mismatch',
        message: "Values don't match.",
      }
    }
    const old = typeof body.oldPassword === 'string' ? body.oldPassword : ''
    // No stored password is longer than the field allows: a longer one is wrong without hashing it.
    const oldFits = old.length <= PASSWORD_MAX
    if (!superuser && !(oldFits && (await verifyPassword(existing.password as string, old)))) {
      formErrors.oldPassword = {
        code: 'validation_invalid_old_password',
        message: 'Missing or invalid old password.',
      }
    }
    const lengthError = passwordLengthError(password)
    if (lengthError && !formErrors.passwordConfirm) formErrors.password = lengthError
    if (!Object.keys(formErrors).length) {
      values.password = await hashPassword(password)
      // A new token key invalidates every token issued with the old password.
      values.tokenKey = randomString(50)
    }
  }
  if (!superuser) delete values.email
  return { values, formErrors }
}

function passwordLengthError(password: string): FieldError | null {
  if (password.length < 8)
    return {
      code: 'validation_min_text_constraint',
      message: 'Must be at least 8 character(s).',
      params: { min: 8 },
    }
  if (password.length > PASSWORD_MAX) {
    return {
      code: 'validation_max_text_constraint',
      message: `Must be less than ${PASSWORD_MAX} character(s).`,
      params: { max: PASSWORD_MAX },
    }
  }
  return null
}
