// Checks docs/openapi.json (cairn serve's API, OpenAPI 3.1) against the OpenAPI 3.1 specification, then the server's
// recorded responses against it, so that the document cannot drift from the server (run `npm ci` here first).
//   node validate.mjs [--strict] DOC [RESPONSES.jsonl ...]      node validate.mjs --self-test [DOC]   (the document only)
// A RESPONSES line: {"method", "target" (path?query as sent), "status", "contentType", "body" (raw text), "test"?}. Prints one
// line per failure and a summary; exits 1 if the document or any response fails (unlisted routes: x-cairn-unmatched).
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {Validator} from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const DOC_ID = 'https://cairn.invalid/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function usage() {
  console.error('usage: node validate.mjs [--self-test] [--strict] DOC [RESPONSES.jsonl ...]\n' +
    '  --strict: a response to a path or method the document does not list fails even when it is one of the\n' +
    '            refusals the document\'s x-cairn-unmatched allows (404 no_route, 405 method_not_allowed, …)');
  process.exit(2);
}

const args = process.argv.slice(2);
const selfTest = args.includes('--self-test');
const strict = args.includes('--strict');
const files = args.filter(a => !a.startsWith('--'));
if (selfTest && files.length === 0) files.push(fileURLToPath(new URL('../../docs/openapi.json', import.meta.url)));
if (args.some(a => a.startsWith('--') && a !== '--self-test' && a !== '--strict') || files.length < 1) usage();
const [docFile, ...responseFiles] = files;
if (selfTest && responseFiles.length) usage();

// ---- the document against OpenAPI 3.1 ----------------------------------------------------

const doc = JSON.parse(fs.readFileSync(docFile, 'utf8'));
{
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  if (!result.valid) {
    console.error(`openapi: ${docFile} is not a valid OpenAPI document:`);
    console.error(JSON.stringify(result.errors, null, 2));
    process.exit(1);
  }
  if (validator.version !== '3.1') {
    console.error(`openapi: ${docFile} is OpenAPI ${validator.version}, not 3.1`);
    process.exit(1);
  }
}

// JSON pointers into the document, and $refs followed (local ones: the document has no other).
const escapeToken = t => String(t).replace(/~/g, '~0').replace(/\//g, '~1');
const pointerOf = tokens => '#' + tokens.map(t => '/' + encodeURIComponent(escapeToken(t))).join('');
function lookup(pointer) {
  if (!pointer.startsWith('#/')) throw new Error(`$ref ${pointer}: only local references are supported`);
  let node = doc;
  const tokens = pointer.slice(2).split('/').map(t => decodeURIComponent(t).replace(/~1/g, '/').replace(/~0/g, '~'));
  for (const token of tokens) {
    if (node === null || typeof node !== 'object' || !(token in node)) throw new Error(`$ref ${pointer} does not resolve`);
    node = node[token];
  }
  return {node, tokens};
}
// A node that may be a {$ref}: the node it names, and the tokens of where that is.
function deref(node, tokens) {
  for (let hops = 0; node && typeof node === 'object' && typeof node.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`$ref loop at ${pointerOf(tokens)}`);
    ({node, tokens} = lookup(node.$ref));
  }
  return {node, tokens};
}

const ajv = new Ajv2020({strict: false, allErrors: true, validateFormats: true});
addFormats(ajv);
ajv.addSchema({...doc, $id: DOC_ID});
const compiled = new Map();
function validatorFor(tokens) {
  const pointer = pointerOf(tokens);
  if (!compiled.has(pointer)) compiled.set(pointer, ajv.compile({$ref: DOC_ID + pointer}));
  return compiled.get(pointer);
}

const mediaType = type => String(type ?? '').split(';')[0].trim().toLowerCase();
const isJson = type => type === 'application/json' || /^application\/[^;]*\+json$/.test(type);

// Every JSON schema of a response compiles (a $ref that names nothing fails here, not at the first response).
function checkResponses(responses, where, problems) {
  for (const [status, raw] of Object.entries(responses ?? {})) {
    try {
      const {node: response, tokens} = deref(raw, [...where, status]);
      for (const [type, media] of Object.entries(response.content ?? {})) {
        if (media.schema && isJson(mediaType(type))) validatorFor([...tokens, 'content', type, 'schema']);
      }
    } catch (error) {
      problems.push(`${pointerOf([...where, status])}: ${error.message}`);
    }
  }
}
{
  const problems = [];
  for (const [template, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      if (item[method]) checkResponses(item[method].responses, ['paths', template, method, 'responses'], problems);
    }
  }
  checkResponses(doc['x-cairn-unmatched']?.responses, ['x-cairn-unmatched', 'responses'], problems);
  if (problems.length) {
    console.error(`openapi: ${docFile}: response schemas that do not compile:`);
    for (const problem of problems) console.error('  ' + problem);
    process.exit(1);
  }
}
if (selfTest || responseFiles.length === 0) {
  console.log(`openapi: ${docFile} is a valid OpenAPI ${doc.openapi} document (${Object.keys(doc.paths).length} paths)`);
  process.exit(0);
}

// ---- recorded responses against the document ---------------------------------------------

// A path template as a matcher of a raw (percent-encoded) request path: literal text matches
// itself, a {param} one non-empty run of characters within a segment (so an A2A task id sent
// as SESSION%2FREF%2FRUN is one segment). The more literal characters, the more specific.
function matcher(template) {
  const segments = template.split('/');
  const patterns = segments.map(segment => new RegExp('^' + segment.split(/(\{[^}]+\})/).map(part =>
    /^\{[^}]+\}$/.test(part) ? '([^/]+?)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('') + '$'));
  const literal = template.replace(/\{[^}]+\}/g, '').length;
  return {template, literal, matches(rawPath) {
    const parts = rawPath.split('/');
    return parts.length === segments.length && parts.every((part, i) => patterns[i].test(part));
  }};
}
const byLiteral = (a, b) => b.literal - a.literal;
const routes = Object.keys(doc.paths).map(matcher).sort(byLiteral);
const unmatched = doc['x-cairn-unmatched'] ?? {};
const unlisted = (unmatched.unlistedPaths ?? []).map(matcher);

function findResponse(responses, status) {
  const code = String(status);
  for (const key of [code, `${code[0]}XX`, 'default']) {
    if (responses && key in responses) return key;
  }
  return null;
}

// Checks one recorded response against a responses object; returns what failed, or null.
function checkAgainst(record, responses, where) {
  const key = findResponse(responses, record.status);
  if (key === null) return {what: `status ${record.status} is not documented (${Object.keys(responses ?? {}).join(', ')})`};
  const {node: response, tokens} = deref(responses[key], [...where, key]);
  const type = mediaType(record.contentType);
  const content = response.content ?? {};
  if (Object.keys(content).length === 0) {
    return record.body ? {what: `response ${key} documents no body, got ${record.body.length} bytes`} : null;
  }
  const declared = Object.keys(content).find(t => {
    const m = mediaType(t);
    return m === type || m === '*/*' || (m.endsWith('/*') && type.startsWith(m.slice(0, -1)));
  });
  if (!declared) return {what: `content type '${record.contentType ?? ''}' is not documented for ${key} (${Object.keys(content).join(', ')})`};
  if (!isJson(type) || !content[declared].schema) return null;
  let body;
  try {
    body = JSON.parse(record.body);
  } catch (error) {
    return {what: `the body is not JSON: ${error.message}`};
  }
  const validate = validatorFor([...tokens, 'content', declared, 'schema']);
  if (validate(body)) return null;
  return {what: `the body does not fit ${pointerOf([...tokens, 'content', declared, 'schema'])}`, errors: validate.errors};
}

function check(record) {
  for (const field of ['method', 'target', 'status']) {
    if (record[field] === undefined) return {what: `the record has no '${field}'`};
  }
  const rawPath = String(record.target).split(/[?#]/)[0];
  const method = String(record.method).toLowerCase();
  if (unlisted.some(m => m.matches(rawPath))) return 'skipped';
  const route = routes.find(m => m.matches(rawPath));
  const operation = route && METHODS.includes(method) ? doc.paths[route.template][method] : undefined;
  if (!operation) {
    const what = route ? `${record.method} is not documented on ${route.template}` : 'no path of the document matches';
    if (strict || !unmatched.responses) return {what};
    // The refusals the server answers to what it does not route (x-cairn-unmatched).
    const failure = checkAgainst(record, unmatched.responses, ['x-cairn-unmatched', 'responses']);
    return failure ? {what: `${what}, and not as x-cairn-unmatched allows: ${failure.what}`, errors: failure.errors} : null;
  }
  return checkAgainst(record, operation.responses, ['paths', route.template, method, 'responses']);
}

function snippet(body) {
  const bytes = Buffer.from(String(body ?? ''), 'utf8');
  return JSON.stringify(bytes.subarray(0, 300).toString('utf8') + (bytes.length > 300 ? '…' : ''));
}
function describeErrors(errors) {
  if (!errors?.length) return '';
  const shown = errors.slice(0, 6).map(e => `${e.instancePath || '/'} ${e.message}${e.params && Object.keys(e.params).length ? ' ' + JSON.stringify(e.params) : ''}`);
  return ' [' + shown.join('; ') + (errors.length > 6 ? `; … ${errors.length - 6} more` : '') + ']';
}

let checked = 0, failed = 0, skipped = 0;
for (const file of responseFiles) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    let record;
    try {
      record = JSON.parse(line);
    } catch (error) {
      checked++;
      failed++;
      console.log(`FAIL ${path.basename(file)}:${index + 1}: not a JSON object: ${error.message}`);
      return;
    }
    const failure = check(record);
    if (failure === 'skipped') {
      skipped++;
      return;
    }
    checked++;
    if (!failure) return;
    failed++;
    const where = record.test ? ` (in ${record.test})` : '';
    console.log(`FAIL ${record.method} ${record.target} -> ${record.status}${where}: ${failure.what}${describeErrors(failure.errors)} body: ${snippet(record.body)}`);
  });
}
if (skipped) console.log(`openapi: ${skipped} responses skipped (x-cairn-unmatched.unlistedPaths: the web viewer's files)`);
console.log(`openapi: ${checked} responses checked, ${failed} failed`);
process.exit(failed ? 1 : 0);
