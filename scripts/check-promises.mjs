// `npm run check:promises`: no floating promises in the coordinator's and the node agent's
// sources (packages/server/src, packages/node/src). Built on the TypeScript compiler API (no
// linter in the project), it reports, like typescript-eslint's no-floating-promises and
// no-misused-promises:
//
// - a statement whose value is a promise that is neither awaited, returned, nor handled
//   (`.catch(f)`, `.then(f, g)`); `void promise` counts as floating too, since it hides nothing
//   from Node's unhandled-rejection check: write `.catch(...)` instead;
// - a function returning a promise passed where a function returning void is expected (event
//   listeners, timers, `forEach`): whoever calls it drops the promise, and a rejection in it is
//   unhandled.
//
// A line may opt out with a comment `// promise-checked: <why>` on it or the line above.
// Exit code 1 and one line per finding when there are any.
import ts from 'typescript'
import { join, relative } from 'node:path'

const root = process.env.CHECK_ROOT ?? new URL('..', import.meta.url).pathname
const roots = ['packages/server/src', 'packages/node/src']

function programFor(pkg) {
  const configPath = join(root, pkg, 'tsconfig.json')
  const config = ts.readConfigFile(configPath, ts.sys.readFile)
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, join(root, pkg))
  return ts.createProgram({
    rootNames: parsed.fileNames,
    options: { ...parsed.options, noEmit: true },
  })
}

const findings = new Set()

for (const pkg of ['packages/server', 'packages/node']) {
  const program = programFor(pkg)
  const checker = program.getTypeChecker()

  const isThenable = (type) => {
    if (!type) return false
    if (type.isUnion()) return type.types.some(isThenable)
    const then = type.getProperty('then')
    if (!then) return false
    const thenType = checker.getTypeOfSymbol(then)
    return thenType.getCallSignatures().length > 0
  }
  const returnsThenable = (type) =>
    type.getCallSignatures().some((s) => isThenable(s.getReturnType()))
  const isVoidish = (type) =>
    (type.flags & (ts.TypeFlags.Void | ts.TypeFlags.Undefined)) !== 0 ||
    (type.isUnion() && type.types.every(isVoidish))

  const isAssignment = (kind) =>
    kind >= ts.SyntaxKind.FirstAssignment && kind <= ts.SyntaxKind.LastAssignment

  /** `p.catch(f)`, `p.then(f, g)`: the rejection is handled. */
  const isHandled = (expr) => {
    if (!ts.isCallExpression(expr) || !ts.isPropertyAccessExpression(expr.expression)) return false
    const name = expr.expression.name.text
    if (name === 'catch' && expr.arguments.length >= 1) return true
    if (name === 'then' && expr.arguments.length >= 2) return true
    if (name === 'finally') return isHandled(expr.expression.expression)
    return false
  }

  for (const file of program.getSourceFiles()) {
    const rel = relative(root, file.fileName)
    if (!roots.some((r) => rel.startsWith(r + '/')) || rel.endsWith('.test.ts')) continue
    const lines = file.text.split('\n')
    const optedOut = (node) => {
      const line = file.getLineAndCharacterOfPosition(node.getStart()).line
      return [line, line - 1].some((l) => l >= 0 && lines[l].includes('promise-checked:'))
    }
    const report = (node, what) => {
      if (optedOut(node)) return
      const { line, character } = file.getLineAndCharacterOfPosition(node.getStart())
      const text = node.getText().split('\n')[0].slice(0, 100)
      findings.add(`${rel}:${line + 1}:${character + 1}: ${what}: ${text}`)
    }

    const visit = (node) => {
      if (ts.isExpressionStatement(node)) {
        let expr = node.expression
        while (ts.isParenthesizedExpression(expr)) expr = expr.expression
        if (ts.isVoidExpression(expr)) {
          if (isThenable(checker.getTypeAtLocation(expr.expression)) && !isHandled(expr.expression))
            report(node, 'promise discarded with void')
        } else if (
          !ts.isAwaitExpression(expr) &&
          !(ts.isBinaryExpression(expr) && isAssignment(expr.operatorToken.kind)) &&
          isThenable(checker.getTypeAtLocation(expr)) &&
          !isHandled(expr)
        ) {
          report(node, 'floating promise')
        }
      }
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const signature = checker.getResolvedSignature(node)
        if (signature) {
          ;(node.arguments ?? []).forEach((arg, i) => {
            if (
              !ts.isArrowFunction(arg) &&
              !ts.isFunctionExpression(arg) &&
              !ts.isIdentifier(arg) &&
              !ts.isPropertyAccessExpression(arg)
            )
              return
            const argType = checker.getTypeAtLocation(arg)
            if (!returnsThenable(argType)) return
            const params = signature.getParameters()
            const param = params[Math.min(i, params.length - 1)]
            if (!param) return
            let paramType = checker.getTypeOfSymbolAtLocation(param, node)
            if (i >= params.length - 1 && signature.hasRestParameter?.()) {
              paramType = checker.getIndexTypeOfType(paramType, ts.IndexKind.Number) ?? paramType
            }
            const expected = paramType.getNonNullableType()
            const signatures = expected.isUnion()
              ? expected.types.flatMap((t) => t.getCallSignatures())
              : expected.getCallSignatures()
            if (signatures.length === 0) return
            if (signatures.every((s) => isVoidish(s.getReturnType())))
              report(arg, 'promise-returning function where a void one is expected')
          })
        }
      }
      if (
        (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) &&
        ts.isObjectLiteralExpression(node.parent)
      ) {
        const value = ts.isPropertyAssignment(node) ? node.initializer : node.name
        const contextual = checker.getContextualType(node.parent)
        const prop = contextual?.getNonNullableType().getProperty(node.name.getText())
        if (prop && returnsThenable(checker.getTypeAtLocation(value))) {
          const expected = checker.getTypeOfSymbolAtLocation(prop, node).getNonNullableType()
          const signatures = expected.isUnion()
            ? expected.types.flatMap((t) => t.getCallSignatures())
            : expected.getCallSignatures()
          if (signatures.length > 0 && signatures.every((s) => isVoidish(s.getReturnType())))
            report(value, 'promise-returning function where a void one is expected')
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(file)
  }
}

for (const f of findings) console.log(f)
if (findings.size) {
  console.log(`\n${findings.size} promise(s) neither awaited nor caught`)
  process.exit(1)
}
console.log('check-promises: no floating promises')
