// dsh-magics live bridge: boots the real published @deepseek-ai packages and
// answers JSON-line requests on stdin with JSON lines on stdout.
//
// Why a persistent process: importing the packages costs ~100 ms; a warm
// request is a few milliseconds.  Why a real cordis Context: it is how the
// harness's own catalog generator reads model-visible schemas
// (ToolRuntime#schemas), so nothing here re-implements schema compilation.
//
// The Python client copies this file next to the installed node_modules (in
// the per-user cache) so that bare package specifiers resolve there.
//
// Request:  {"id": 1, "op": "hello" | "schemas" | "escalate" | "markers", ...}
// Response: {"id": 1, "ok": true, "result": ...}
//        or {"id": 1, "ok": false, "error": {"kind": ..., "message": ...}}

import { createInterface } from 'node:readline'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

// stdout is the protocol channel: anything a package logs goes to stderr.
console.log = console.error
console.info = console.error
console.debug = console.error

// Every version has these; the older (task era) tree lacks the optional ones.
const PACKAGES = [
  '@deepseek-ai/dsh-tool-bash',
  '@deepseek-ai/dsh-tools',
  '@deepseek-ai/dsh-sandbox',
  '@deepseek-ai/dsh-sandbox-policy',
  '@deepseek-ai/dsh-system-prompt',
  '@deepseek-ai/dsh-user-approval',
  '@deepseek-ai/cordis',
]
const OPTIONAL = [
  '@deepseek-ai/dsh-tool-jobs',
  '@deepseek-ai/dsh-tool-bash-persistent',
  '@deepseek-ai/dsh-terminal',
]
// Reported by hello: where an older tree's executor names come from.
const REPORTED = ['@deepseek-ai/dsh-bash', '@deepseek-ai/dsh-shell', '@deepseek-ai/dsh-subprocess']

const packageJson = (pkg) => {
  try {
    return require(`${pkg}/package.json`)
  } catch {
    return null
  }
}
const versionOf = (pkg) => packageJson(pkg)?.version ?? null

const installed = (pkg) => {
  try {
    import.meta.resolve(pkg)
    return true
  } catch {
    return false
  }
}

const [ToolBash, ToolsPkg, Sandbox, SandboxPolicyPkg, SystemPromptPkg, ApprovalPkg, Cordis] =
  await Promise.all(PACKAGES.map((p) => import(p)))
const [ToolJobs, ToolBashPersistent, TerminalPkg] = await Promise.all(
  OPTIONAL.map((p) => (installed(p) ? import(p) : null)),
)

const ToolRuntime = ToolsPkg.default
const SandboxPolicyService = SandboxPolicyPkg.default
const SystemPrompt = SystemPromptPkg.default
const TerminalSessionService = TerminalPkg?.default
const ApprovalService = ApprovalPkg.default
const { Context } = Cordis

// The executor seam's service names differ by version (`shell`/`shellEnv` now,
// `bash`/`bashEnv` in the task era): take them from the plugin's own inject list
// (pinned by tests/harness/test_task_era.py::test_live_texts_match_stored_facts).
const INJECT = [...(ToolBash.inject ?? [])]
const EXECUTOR_SEAM = INJECT.includes('bash') ? 'bash' : 'shell'
const ENV_SEAM = INJECT.includes('bashEnv') ? 'bashEnv' : 'shellEnv'

/** Run fn inside a fresh real Context with the system prompt and tool runtime. */
async function withRealCtx(fn) {
  const ctx = new Context()
  try {
    await ctx.plugin(SystemPrompt)
    await ctx.plugin(ToolRuntime, {})
    return await fn(ctx)
  } finally {
    await ctx.fiber.dispose()
  }
}

const byName = (a, b) => a.name.localeCompare(b.name)

/** The executor seam: only sandboxMode matters at registration time. */
function fakeShell(mode) {
  return {
    name: 'dsh-magics-fake-shell',
    apply(c) {
      c.provide(EXECUTOR_SEAM, { sandboxMode: mode ?? undefined, resolve: (r) => r })
      c.provide(ENV_SEAM, { collect: () => ({}) })
    },
  }
}

async function bashSchemas({ background, sandbox, sandbox_policy: sandboxPolicy }) {
  return withRealCtx(async (ctx) => {
    await ctx.plugin(fakeShell(sandbox))
    if (sandbox != null && sandboxPolicy !== false) {
      await ctx.plugin(SandboxPolicyService, { mode: sandbox, workspaceRoot: '/tmp/dsh-magics-ws' })
    }
    const config = background === undefined ? {} : { enableRunInBackground: background }
    await ctx.plugin(ToolBash, config)
    return ctx.tools.schemas().sort(byName)
  })
}

async function jobsSchemas() {
  return withRealCtx(async (ctx) => {
    await ctx.plugin({
      name: 'dsh-magics-fake-jobs',
      apply(c) {
        c.provide('jobs', { attachController: () => {}, onJobDone: () => () => {}, list: () => [] })
      },
    })
    await ctx.plugin(ToolJobs, {})
    return ctx.tools.schemas().sort(byName)
  })
}

async function persistentSchemas() {
  return withRealCtx(async (ctx) => {
    await ctx.plugin(TerminalSessionService)
    await ctx.plugin(ToolBashPersistent, {})
    return ctx.tools.schemas().sort(byName)
  })
}

// tool-jobs and tool-bash-persistent do not depend on the bash config: boot once.
let jobsOnce
let persistentOnce

async function opSchemas(req) {
  const config = req.config ?? {}
  let bash
  try {
    bash = await bashSchemas(config)
  } catch (e) {
    return { load_error: String(e?.message ?? e) }
  }
  if (bash.length === 0) {
    return { load_error: 'no tool registered (plugin did not mount)' }
  }
  const tag = (pkg) => (s) => ({ package: pkg, ...s })
  const jobs = ToolJobs ? await (jobsOnce ??= jobsSchemas()) : []
  const persistent = ToolBashPersistent ? await (persistentOnce ??= persistentSchemas()) : []
  return {
    tools: [
      ...bash.map(tag('@deepseek-ai/dsh-tool-bash')),
      ...jobs.map(tag('@deepseek-ai/dsh-tool-jobs')),
    ],
    related: persistent.map(tag('@deepseek-ai/dsh-tool-bash-persistent')),
  }
}

/**
 * Real validateEscalationArgs + approveEscalation.  The approver is the real
 * ApprovalService (policy ask/never) with one scripted answerer, or absent.
 * Flags record which steps were reached so the client can draw the chain.
 */
async function opEscalate(req) {
  const r = req.request
  const orUndef = (v) => (v === null || v === undefined ? undefined : v)
  const out = { stage: null, message: null, granted: null, asked: false, answered: false }
  try {
    Sandbox.validateEscalationArgs(orUndef(r.request), orUndef(r.justification))
  } catch (e) {
    return { ...out, stage: 'validate', message: String(e.message) }
  }
  if (orUndef(r.request) === undefined) {
    return { ...out, stage: 'no-request' }
  }
  const ctx = new Context()
  try {
    let approver
    if (r.approver) {
      await ctx.plugin(ApprovalService, { policy: r.policy ?? 'ask' })
      ctx.on('approval/request', () => {
        out.answered = true
        return r.outcome
      })
      const service = ctx.get('approval')
      approver = {
        request: (q) => {
          out.asked = true
          return service.request(q)
        },
      }
    }
    let agent
    if (r.agent) {
      const events = [{ type: 'turn/start', data: {} }]
      agent = { session: { events, append: (type, data) => events.push({ type, data }) } }
    }
    const granted = await Sandbox.approveEscalation(
      { requestedMode: r.request, effectiveMode: r.mode, justification: r.justification, subject: 'command' },
      { approver, agent, toolName: 'bash', callId: 'dsh-magics-call' },
    )
    return { ...out, stage: 'approve', granted }
  } catch (e) {
    return { ...out, stage: 'approve', message: String(e.message) }
  } finally {
    await ctx.fiber.dispose()
  }
}

function opMarkers(req) {
  return {
    denial: Sandbox.sandboxDenialMarker(req.mode),
    hint: req.escalation_advertised === false ? null : Sandbox.escalationHintMarker('command'),
  }
}

function opHello() {
  const standins = REPORTED.map((p) => [p, packageJson(p)?.dshMagicsStandIn]).filter(([, s]) => s)
  return {
    node: process.version,
    versions: Object.fromEntries([...PACKAGES, ...OPTIONAL, ...REPORTED].map((p) => [p, versionOf(p)])),
    seams: [EXECUTOR_SEAM, ENV_SEAM],
    standins: Object.fromEntries(standins),
    escalation_targets: [...Sandbox.ESCALATION_TARGETS],
    wider_modes: Sandbox.WIDER_MODES,
  }
}

const OPS = { hello: opHello, schemas: opSchemas, escalate: opEscalate, markers: opMarkers }

const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity })
// Requests are handled one at a time, in order: the client is synchronous.
let chain = Promise.resolve()
rl.on('line', (line) => {
  chain = chain.then(async () => {
    let req
    try {
      req = JSON.parse(line)
    } catch (e) {
      send({ id: null, ok: false, error: { kind: 'protocol', message: `bad JSON: ${e.message}` } })
      return
    }
    const op = OPS[req.op]
    if (!op) {
      send({ id: req.id, ok: false, error: { kind: 'protocol', message: `unknown op ${req.op}` } })
      return
    }
    try {
      send({ id: req.id, ok: true, result: await op(req) })
    } catch (e) {
      send({ id: req.id, ok: false, error: { kind: 'exception', message: String(e?.stack ?? e) } })
    }
  })
})
rl.on('close', () => {
  chain.then(() => process.exit(0))
})
send({ id: 0, ok: true, result: { ready: true } })
