// Types for /ui/vendor/purify.js, the build's copy of DOMPurify's ES module
// (dist/purify.es.mjs, see CMakeLists.txt): the package's own declarations.
export { default } from 'dompurify';
export * from 'dompurify';
