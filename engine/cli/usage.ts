// The usage text of every command, apart from the commands themselves: `--help` prints it without
// importing what the commands need, and `gateway serve` does not hold the operator commands'
// modules (engine/cli/main.ts imports a command's module only when it runs).

export const SERVE_USAGE = `  serve [--config config.yaml] [--role all|api|worker] [--workers N|auto]
                                        run the gateway in the foreground (roles and --workers need the
                                        redis store; --workers auto: one process per core it may use)`;

export const CHECK_USAGE = `  check [paths...] [--config FILE] [--format text|json|github] [--strict]
                                        validate config, descriptors and fixtures without serving;
                                        paths: descriptor files, folders, fixture files (default:
                                        the config's vendors folder). Exit 1 on any error
                                        (--strict: on warnings too)`;

export const TOOLS_USAGE = `  routes [source] [--config FILE] [--format text|markdown|json]
                                        the route table: method, path, kind, vendor, success
                                        status, price (source: a folder or git ref; default the
                                        config's vendors folder)
  diff <old> [new] [--config FILE] [--format markdown|text|json] [--fail-on breaking,...|none] [--out FILE]
                                        what changed for API clients and billing between two
                                        folders or a git ref and the working tree (default new);
                                        exit 1 on the --fail-on classes (default breaking)
  openapi [--config FILE] [--out FILE] [--server-url URL]
                                        the OpenAPI 3.1 document of the descriptors
  new-vendor <name> --style async|sync|stream [--config FILE] [--dir DIR] [--force]
                                        scaffold a descriptor and fixtures that pass check`;

export const ADMIN_USAGE = `
  tenant create --name NAME [--requires-live]
  tenant list
  key create --tenant TENANT_ID [--scopes '*'|vendor:create,...] [--mode live|test] [--ttl SECONDS] [--name NAME]
  key list --tenant TENANT_ID
  key revoke KEY_ID
  wallet topup --tenant TENANT_ID --credits 100.00 [--ref PAYMENT_ID]
  wallet show --tenant TENANT_ID
  wallet ledger --tenant TENANT_ID [--limit 50]
  wallet threshold --tenant TENANT_ID --credits 500.00|default
  limits show --tenant TENANT_ID
  limits set --tenant TENANT_ID --json '{"concurrent_tasks": 50, "rate": {"key": {"per_second": 100}}}'
  (operator commands call the admin API: GATEWAY_URL, default http://127.0.0.1:$PORT or :8080,
   authenticated with GATEWAY_ADMIN_TOKEN)`;
