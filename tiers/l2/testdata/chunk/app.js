import { api } from "./api.js";

export function render(el, items) {
  el.innerHTML = items
    .map((x) => `<li>${x}</li>`)
    .join("");
}

const load = async (id) => {
  const r = await api.get(`/items/${id}`);
  return r.json();
};

export default class Store {
  constructor() {
    this.items = [];
  }
}
