/**
 * `/api/products`: a JSON API. The action returns a plain object, as Koa
 * allows; koa-buffer serialises it itself so it can compress it and give it
 * an ETag. The list is fixed, so the ETag is stable.
 */
import type { Context } from 'koa';

interface Product {
  id: number;
  name: string;
  category: string;
  priceCents: number;
  inStock: boolean;
}

const categories = ['tea', 'coffee', 'cocoa', 'kitchen'];
const adjectives = ['Smoky', 'Bright', 'Mellow', 'Bold', 'Floral', 'Nutty', 'Spiced', 'Classic'];
const nouns = ['Blend', 'Roast', 'Leaf', 'Mug', 'Press', 'Kettle', 'Grinder', 'Tin', 'Sampler', 'Filter'];

const products: Product[] = Array.from({ length: 40 }, (_, i) => ({
  id: i + 1,
  name: `${adjectives[i % adjectives.length]} ${nouns[(i * 3) % nouns.length]}`,
  category: categories[i % categories.length]!,
  priceCents: 450 + ((i * 379) % 4200),
  inStock: i % 7 !== 3,
}));

/** Serves the product list. */
export function productsApi(ctx: Context): void {
  ctx.body = { count: products.length, products };
}
