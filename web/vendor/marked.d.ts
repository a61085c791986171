// Types for /ui/vendor/marked.js, the build's copy of marked's ES module
// (lib/marked.esm.js, see CMakeLists.txt): the package's own declarations.
export * from 'marked';
