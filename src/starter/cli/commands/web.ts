/**
 * `mpf web views`: Temporal Web links for the operator's saved views ("awaiting PIN", "needs
 * reconciliation", "failed today", …), and with --setup-script the browser-console snippet that
 * saves them and adds the MpfState column in Temporal Web (which keeps both per browser).
 */
import { Command } from 'commander';
import { cliSetting } from '../../../config/cli-env';
import { operatorViews, webSetupScript, workflowListUrl } from '../../client/temporal-web';

interface WebViewsOptions {
  uiUrl: string;
  namespace: string;
  setupScript?: boolean;
  json?: boolean;
}

export function webCommand(): Command {
  const web = new Command('web').description('Temporal Web for operators: saved views and columns');
  web
    .command('views')
    .description('print Temporal Web links of the saved views (visibility queries on MpfState / MpfFlowKind)')
    .option('--ui-url <url>', 'Temporal Web address (default TEMPORAL_WEB_URL, else http://localhost:8233)', cliSetting('TEMPORAL_WEB_URL'))
    .option('--namespace <ns>', 'namespace (default TEMPORAL_NAMESPACE, else default)', process.env.TEMPORAL_NAMESPACE || 'default')
    .option('--setup-script', "print instead the snippet to paste in the browser console on Temporal Web's page: saves the views and adds the MpfState column")
    .option('--json', 'print the views as JSON')
    .action((opts: WebViewsOptions) => {
      if (opts.setupScript) return void process.stdout.write(`${webSetupScript(opts.namespace)}\n`);
      const views = operatorViews().map((v) => ({ ...v, url: workflowListUrl(opts.uiUrl, opts.namespace, v.query) }));
      if (opts.json) return void process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
      for (const v of views) process.stdout.write(`${v.name}\n  query: ${v.query}\n  ${v.url}\n`);
    });
  return web;
}
