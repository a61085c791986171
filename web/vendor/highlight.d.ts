// Types for /ui/vendor/highlight.js, the build's copy of highlight.js's ES
// build with its common languages (@highlightjs/cdn-assets, es/highlight.min.js,
// see CMakeLists.txt). That package ships no declarations; these cover
// what the viewer calls, as highlight.js's own types spell it.
export interface HighlightResult {
  /** The code as HTML: the text escaped, tokens in <span class="hljs-…">. */
  value: string;
  language?: string;
  relevance: number;
}
export interface HighlightOptions {
  language: string;
  ignoreIllegals?: boolean;
}
export interface Language {
  name?: string;
  aliases?: string[];
}
export interface HLJSApi {
  highlight(code: string, options: HighlightOptions): HighlightResult;
  getLanguage(name: string): Language | undefined;
  listLanguages(): string[];
}
declare const hljs: HLJSApi;
export default hljs;
