// Imports profiles with speedscope's own importer, headless, and prints what it made
// of each as one JSON line: {file, format, profiles: [{name, unit, total, frames}]},
// `frames` mapping each frame name to its self weight. Exits 1 if a file is not
// recognised.
//
//   node speedscope-import.mjs FILE...
//
// The npm package ships only the web app: one bundled script, no API to import. The
// importer is inside it, as the lazily loaded module the app runs when a file is
// dropped on it. So the bundle is evaluated in a bare `vm` context with one line
// added at its top that hands that module out; the app's own start-up then stops at
// its first use of the DOM, after the module is defined. The hook is found by the
// module's export name (`importProfileGroupFromText`), not by minified names.
import fs from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const pkg = path.dirname(require.resolve('speedscope/package.json'))
const dist = path.join(pkg, 'dist', 'release')
const bundle = fs.readdirSync(dist).find(f => /^speedscope-.*\.js$/.test(f))
if (!bundle) throw new Error(`no speedscope-*.js in ${dist}`)
let src = fs.readFileSync(path.join(dist, bundle), 'utf8')

// esbuild's lazy module: `var X=Promise.resolve().then(()=>(INIT(),NS))`, where NS
// is the namespace object whose exports include importProfileGroupFromText.
const lazy = /var \w+=Promise\.resolve\(\)\.then\(\(\)=>\((\w+)\(\),(\w+)\)\)/g
let hook = null
for (const m of src.matchAll(lazy)) {
  if (new RegExp(`\\w+\\(${m[2]},\\{[^{}]*importProfileGroupFromText:`).test(src)) hook = m
}
if (!hook) throw new Error(`speedscope's import module not found in ${bundle}`)
src = src.replace('(()=>{', `(()=>{globalThis.__importer=()=>(${hook[1]}(),${hook[2]});`)

const formats = []
const context = {
  console: { ...console, log: (...a) => formats.push(a.join(' ')) },
  TextDecoder, TextEncoder, URL, setTimeout, clearTimeout, WebAssembly,
}
context.globalThis = context
vm.createContext(context)
try {
  vm.runInContext(src, context)
} catch (e) {
  // Expected: the web app needs `window`/`document` to start.
}
if (typeof context.__importer !== 'function') throw new Error('the import hook did not run')
const importer = context.__importer()

let failed = false
for (const file of process.argv.slice(2)) {
  formats.length = 0
  const bytes = fs.readFileSync(file)
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
  const group = await importer.importProfilesFromArrayBuffer(path.basename(file), buffer)
  if (!group) {
    failed = true
    console.log(JSON.stringify({ file, format: null, profiles: [] }))
    continue
  }
  const profiles = group.profiles.map(p => {
    const frames = {}
    p.forEachFrame(f => { frames[f.name] = (frames[f.name] || 0) + f.getSelfWeight() })
    return { name: p.getName(), unit: p.getWeightUnit(), total: p.getTotalWeight(), frames }
  })
  const format = formats.find(l => l.startsWith('Importing')) || null
  console.log(JSON.stringify({ file, format, profiles }))
}
process.exit(failed ? 1 : 0)
