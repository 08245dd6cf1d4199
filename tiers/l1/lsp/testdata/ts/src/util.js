// Plain JavaScript beside the TypeScript.
function greet(name) {
  return "hello " + name;
}
module.exports = { greet: greet };
