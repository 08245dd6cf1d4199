"""Shapes, and the sum of their areas."""
import sys
import math


class Circle:
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return math.pi * self.radius * self.radius


def total_area(shapes: list[Circle]) -> float:
    """total_area sums the areas of shapes."""
    print("😀", file=sys.stderr); return sum(s.area() for s in shapes)
