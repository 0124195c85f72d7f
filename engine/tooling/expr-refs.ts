// Which input fields a JSONata expression reads: the paths that start at the expression's
// input (`prompt`, `input.size`, `$.duration`), not those relative to a step, a filter or a
// lambda, and not variables (`$result.images`). Found on the parsed AST, never by regex.
import jsonata from 'jsonata';

export interface FieldRef {
  path: string[];
  /** Character position in the expression source, when JSONata knows it. */
  position?: number;
}

interface Node {
  type?: string;
  value?: unknown;
  position?: number;
  steps?: Node[];
  stages?: Node[];
  predicate?: Node[];
  expr?: Node;
  lhs?: Node | Node[] | Node[][];
  rhs?: Node;
  arguments?: Node[];
  procedure?: Node;
  condition?: Node;
  then?: Node;
  else?: Node;
  expressions?: Node[];
  body?: Node;
  group?: { lhs?: Node[][] };
  pattern?: Node;
  update?: Node;
  delete?: Node;
  terms?: Node[];
  expression?: Node;
}

/** Root-level field paths an expression reads; throws what jsonata throws when it does not parse. */
export function rootFieldRefs(source: string): FieldRef[] {
  const ast = jsonata(source).ast() as Node;
  const out: FieldRef[] = [];
  visit(ast, true, out);
  return out;
}

function visit(node: Node | undefined, atRoot: boolean, out: FieldRef[]): void {
  if (!node || typeof node !== 'object') return;
  switch (node.type) {
    case 'path':
      visitPath(node, atRoot, out);
      return;
    case 'name':
      // A bare name outside a path (JSONata normally wraps names in a path).
      if (atRoot && typeof node.value === 'string') out.push({ path: [node.value], position: node.position });
      visitStages(node, out);
      return;
    case 'lambda':
      // Parameters and the body's context are the caller's business: not the input's fields.
      visit(node.body, false, out);
      return;
    default:
      break;
  }
  for (const child of children(node)) visit(child, atRoot, out);
  visitStages(node, out);
}

function visitPath(node: Node, atRoot: boolean, out: FieldRef[]): void {
  const steps = node.steps ?? [];
  let i = 0;
  let rootPath = atRoot;
  // `$.a` and `$$.a` start at the input too.
  if (steps[0]?.type === 'variable' && (steps[0].value === '' || steps[0].value === '$')) i = 1;
  else if (steps[0]?.type !== 'name') rootPath = false;
  if (rootPath) {
    const names: string[] = [];
    for (let j = i; j < steps.length && steps[j]!.type === 'name'; j++) names.push(String(steps[j]!.value));
    if (names.length) out.push({ path: names, position: steps[i]?.position });
  }
  // The first step is evaluated in the outer context; later steps, filters and stages are relative.
  steps.forEach((s, j) => {
    if (j === 0 && s.type !== 'name') visit(s, atRoot, out);
    else if (s.type !== 'name') visit(s, false, out);
    visitStages(s, out);
  });
  visitStages(node, out);
}

function visitStages(node: Node, out: FieldRef[]): void {
  for (const s of node.stages ?? []) visit(s.expr ?? s, false, out);
  for (const s of node.predicate ?? []) visit(s.expr ?? s, false, out);
  for (const pair of node.group?.lhs ?? []) for (const n of pair) visit(n, false, out);
}

function children(node: Node): Node[] {
  const out: Node[] = [];
  const push = (n: unknown) => {
    if (Array.isArray(n)) n.forEach(push);
    else if (n && typeof n === 'object') out.push(n as Node);
  };
  if (node.type === 'filter' || node.type === 'sort' || node.type === 'group') return out;
  push(node.lhs);
  push(node.rhs);
  push(node.arguments);
  push(node.condition);
  push(node.then);
  push(node.else);
  push(node.expressions);
  push(node.terms);
  push(node.pattern);
  push(node.update);
  push(node.delete);
  if (node.type === 'function' || node.type === 'partial') {
    // The procedure is a variable or a lambda; a lambda defined inline is visited as such.
    if (node.procedure?.type === 'lambda') push(node.procedure);
  }
  if (node.type === 'unary' && node.value === '-' && node.expression) push(node.expression);
  return out;
}
