// Area of a shape, in square units.
export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  constructor(private readonly radius: number) {}
  area(): number {
    return Math.PI * this.radius * this.radius;
  }
}

/** totalArea sums the areas of shapes. */
export function totalArea(shapes: Shape[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}

// π ≈ 3.14, and 😀 is two UTF-16 units: the use after it must land right.
export const emoji = "😀"; export const sum = totalArea;
