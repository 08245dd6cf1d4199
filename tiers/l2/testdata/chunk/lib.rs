use std::fmt;

/// A 2-D vector.
pub struct Vec2 {
    x: f64,
    y: f64,
}

impl fmt::Display for Vec2 {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub fn dot(a: &Vec2, b: &Vec2) -> f64 {
    a.x * b.x + a.y * b.y
}
