// Prints the launch configuration ({command, args, env}) that a host of MCP
// Bundles derives from an unpacked bundle's manifest and the user's
// settings, computed by getMcpConfigForManifest: the function the official
// @anthropic-ai/mcpb package exports for hosts, which Claude's desktop app
// uses.
//
//   node hostconfig.mjs BUNDLE_DIR '{"config": "/path/airlock.yaml", "credential_1": "..."}'
//
// The settings are what the user entered; those left out are left to the
// manifest's defaults, as the host leaves them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getMcpConfigForManifest } from '@anthropic-ai/mcpb';

const [dir, settings = '{}'] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: node hostconfig.mjs BUNDLE_DIR [SETTINGS_JSON]\n');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: dir,
  systemDirs: {},
  userConfig: JSON.parse(settings),
  pathSeparator: '/',
  logger: { log: () => {}, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) },
});
if (!config) {
  process.stderr.write('hostconfig: the host would not start this bundle (a required setting is missing)\n');
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ command: config.command, args: config.args ?? [], env: config.env ?? {} })}\n`);
