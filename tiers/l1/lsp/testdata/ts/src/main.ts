import { Circle, totalArea } from "./shapes";
import { emoji } from "./shapes";

const shapes = [new Circle(1), new Circle(2)];
console.log(emoji, totalArea(shapes));
