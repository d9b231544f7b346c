/** The prefix of every sealed value (`sealed:v1:<keyId>:…`). Pure: the workflow bundle imports it too. */
export const SEALED_PREFIX = 'sealed:v1:';
